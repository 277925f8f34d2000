// The layering rule: each layer imports only the layers below it.
//
//   core      lib/core/ (commands, server operations, identity, permissions,
//             rates, symbols), errors, protocol, namespaces, codecs, the IPC ops
//   engines   lib/engines/ (memory, Redis)
//   ways in   lib/pusher/, lib/admin/, lib/webhooks/ (and the native ones in lib/worker/)
//   wiring    lib/worker/ and lib/primary/ (index.js, relay.js, ...), lib/protocols.js
//
// What a lower layer needs from a higher one (metrics, another protocol's
// namespaces) is handed to it by the wiring. Written as ESLint's own
// no-restricted-imports, one entry per layer; a pattern matches the import's
// path as written, so `../worker/x.js` and `../../worker/x.js` alike.

/** A pattern refusing imports from a folder of lib/ (any depth of ../). */
const folder = (name, why) => ({ regex: `^(\\.\\.?/)+${name}/`, message: why });
/** A pattern refusing imports of one module of lib/. */
const module = (name, why) => ({ regex: `^(\\.\\.?/)+${name.replace('.', '\\.')}$`, message: why });

const ABOVE_CORE = 'the core is the lowest layer: hand it what it needs (a counter, a registry) instead of importing it';
const ABOVE_ENGINES = 'an engine sees only the core: no way in, worker or primary module';
const WIRING = 'a way in is attached by the wiring, never the other way round';

const WAYS_IN = ['pusher', 'admin', 'webhooks'];
const WIRING_FOLDERS = ['worker', 'primary'];

/** @returns {object} a flat-config entry that refuses these patterns in these files */
function layer(files, patterns) {
  return { files, rules: { 'no-restricted-imports': ['error', { patterns }] } };
}

export const layerRules = [
  layer(
    ['lib/core/**/*.js', 'lib/errors.js', 'lib/protocol.js', 'lib/namespaces.js', 'lib/codecs/**/*.js', 'lib/ipc.js'],
    [
      ...[...WIRING_FOLDERS, ...WAYS_IN, 'engines', 'backend'].map((name) => folder(name, ABOVE_CORE)),
      ...['protocols.js', 'config.js', 'config-file.js'].map((name) => module(name, ABOVE_CORE))
    ]
  ),
  layer(['lib/engines/**/*.js'], [...[...WIRING_FOLDERS, ...WAYS_IN].map((name) => folder(name, ABOVE_ENGINES)), module('protocols.js', ABOVE_ENGINES)]),
  layer(
    WAYS_IN.map((name) => `lib/${name}/**/*.js`),
    [folder('primary', WIRING), module('protocols.js', WIRING), module('worker/index.js', WIRING), module('worker/main.js', WIRING)]
  ),
  layer(['lib/worker/**/*.js'], [folder('primary', 'a worker does not load the primary\'s modules')])
];
