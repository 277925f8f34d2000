// The layering rule: each layer imports only the layers below it.
//
//   core        lib/core/ (commands, server operations, identity, permissions,
//               rates, the error family, channel namespaces, the IPC ops),
//               lib/protocol/ (the native wire protocol), lib/codecs/
//   runtime     lib/runtime/ (the process and the machine: logger, timers,
//               event-loop delay, Node's internals, capacity, /proc)
//   engines     lib/engines/ (memory, Redis)
//   connection  lib/session/ (a connection's life, the same for every way in:
//               admission, sessions, subscriptions, presence, keepalive, metrics)
//               and lib/transport/ (writing frames to a WebSocket or an SSE stream)
//   ways in     lib/native/ (the gateway's own protocol: WebSocket, SSE, HTTP),
//               lib/pusher/, lib/ably/, lib/admin/, lib/webhooks/: none imports another
//               but the webhooks' delivery, which Pusher's webhooks use
//   wiring      lib/worker/, lib/primary/ and lib/wiring/ (the ways-in registry)
//
// What a lower layer needs from a higher one (metrics, another protocol's
// namespaces, the relay) is handed to it by the wiring. Within the core, the
// wire protocol (lib/protocol/) imports only the error family and its own
// modules: the browser client loads them as they are. Written as ESLint's own
// no-restricted-imports, one entry per layer; a pattern matches the import's
// path as written, so `../worker/x.js` and `../../worker/x.js` alike.

/** A pattern refusing imports from a folder of lib/ (any depth of ../). */
const folder = (name, why) => ({ regex: `^(\\.\\.?/)+${name}/`, message: why });
/** A pattern refusing imports of one module of lib/. */
const module = (name, why) => ({ regex: `^(\\.\\.?/)+${name.replace('.', '\\.')}$`, message: why });

const ABOVE_CORE = 'the core is the lowest layer: hand it what it needs (a counter, a registry) instead of importing it';
const ABOVE_RUNTIME = 'the runtime (the process, the machine, Node\'s internals) sees only the core';
const ABOVE_ENGINES = 'an engine sees only the core: no connection, way in, worker or primary module';
const ABOVE_CONNECTION = 'a connection\'s life is the same for every way in: hand it what a way in or the wiring owns';
const WIRING = 'a way in is attached by the wiring, never the other way round';
const SIDEWAYS = 'one way in does not load another: what they share lives in a lower layer';
const PLAIN = 'the protocol\'s modules load in the browser as they are: they import only ../core/errors.js and each other';

const WAYS_IN = ['native', 'pusher', 'ably', 'admin', 'webhooks'];
const CONNECTION = ['session', 'transport'];
const WIRING_FOLDERS = ['worker', 'primary', 'wiring'];

/** @returns {object} a flat-config entry that refuses these patterns in these files */
function layer(files, patterns) {
  return { files, rules: { 'no-restricted-imports': ['error', { patterns }] } };
}

/** A way in may load the webhooks' delivery (Pusher's webhooks use it), and no other way in. */
const otherWaysIn = (name) => WAYS_IN.filter((other) => other !== name && other !== 'webhooks').map((other) => folder(other, SIDEWAYS));

export const layerRules = [
  layer(
    ['lib/core/**/*.js', 'lib/protocol/**/*.js', 'lib/codecs/**/*.js'],
    [
      ...[...WIRING_FOLDERS, ...WAYS_IN, ...CONNECTION, 'engines', 'backend', 'runtime'].map((name) => folder(name, ABOVE_CORE)),
      ...['config/options.js', 'config/file.js'].map((name) => module(name, ABOVE_CORE))
    ]
  ),
  // Later than the core's entry, so it replaces the core's patterns for these files with a stricter one.
  layer(['lib/protocol/**/*.js'], [{ regex: '^(?!\\./[a-z-]+\\.js$|\\.\\./core/errors\\.js$)', message: PLAIN }]),
  layer(['lib/runtime/**/*.js'], [...[...WIRING_FOLDERS, ...WAYS_IN, ...CONNECTION, 'engines', 'config'].map((name) => folder(name, ABOVE_RUNTIME))]),
  layer(['lib/engines/**/*.js'], [...[...WIRING_FOLDERS, ...WAYS_IN, ...CONNECTION].map((name) => folder(name, ABOVE_ENGINES))]),
  layer(CONNECTION.map((name) => `lib/${name}/**/*.js`), [...[...WIRING_FOLDERS, ...WAYS_IN].map((name) => folder(name, ABOVE_CONNECTION))]),
  ...WAYS_IN.map((name) => layer([`lib/${name}/**/*.js`], [...WIRING_FOLDERS.map((wiring) => folder(wiring, WIRING)), ...otherWaysIn(name)])),
  layer(['lib/worker/**/*.js'], [folder('primary', 'a worker does not load the primary\'s modules')])
];
