// --config FILE: the gateway's options as JSON, every flag under its
// camelCase name ("historySize": 100), plus `namespaces` (../namespaces.js)
// and `pusherApps` (./pusher/apps.js).
// Read through the same options table as the flags and the GATEWAY_*
// variables, which override it: yargs layers flags over the environment over
// the file over the defaults. Checked whole before anything starts: a bad
// file is a usage error naming the file, the key and why.
import { readFileSync } from 'node:fs';
import { parseCommandLine, checkOption, camel, envVariable, UsageError } from './cli.js';
import { options, checkCombinations, SECRET_OPTIONS } from './options.js';
import { namespacesProblem } from '../core/namespaces.js';

const FLAGS = new Map(Object.keys(options).map((name) => [camel(name), name]));
const ENV_PREFIX = 'GATEWAY';
const SECRET_VARIABLES = SECRET_OPTIONS.map((name) => envVariable(ENV_PREFIX, name));

/**
 * The gateway's configuration from its command line, its environment and
 * the file --config names. Called at start and again on SIGHUP.
 * @param {string[]} argv
 * @param {Record<string, string>} [withheld] the secret variables withholdSecretVariables() took out of the environment
 * @returns {Promise<object>} resolved, camelCase keys, `namespaces` always a list
 * @throws {UsageError}
 */
export async function gatewayConfig(argv, withheld = {}) {
  const config = await parseCommandLine({
    argv,
    table: options,
    usage: 'gateway [options]',
    envPrefix: ENV_PREFIX,
    env: withheld,
    configFile: readConfigFile,
    check: (resolved) => checkCombinations(Object.assign(resolved, { namespaces: resolved.namespaces ?? [] })),
    epilogue: 'Every flag can also be set as GATEWAY_<FLAG> (dashes as underscores), or in the --config file. `gateway doctor --help` checks this machine.'
  });
  return config;
}

/**
 * Takes the secret GATEWAY_* variables (the options with `secret`) out of
 * this process's environment, where every process it forks would inherit
 * them and /proc/<pid>/environ would show them; gatewayConfig() given them
 * still reads them, so a SIGHUP resolves the same configuration.
 * @returns {Record<string, string>} the variables taken out, by name
 */
export function withholdSecretVariables() {
  const withheld = {};
  for (const name of SECRET_VARIABLES) {
    if (process.env[name] === undefined) continue;
    withheld[name] = process.env[name];
    delete process.env[name];
  }
  return withheld;
}

/**
 * Reads and checks a config file.
 * @returns {object} its values, camelCase keys as the options table names them, and `namespaces`
 * @throws {UsageError}
 */
export function readConfigFile(path) {
  const refuse = (why) => {
    throw new UsageError(`--config ${path}: ${why}`);
  };
  let text;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    refuse(`cannot read it (${err.code ?? err.message})`);
  }
  let values;
  try {
    values = JSON.parse(text);
  } catch (err) {
    refuse(`not JSON: ${err.message}`);
  }
  if (values === null || typeof values !== 'object' || Array.isArray(values)) refuse('must hold a JSON object');
  for (const [key, value] of Object.entries(values)) {
    if (key === 'namespaces') {
      const problem = namespacesProblem(value, options);
      if (problem) refuse(problem);
      continue;
    }
    if (key === 'pusherApps') continue; // checked with the --pusher-* flags, once they are merged (lib/pusher/apps.js)
    const flag = FLAGS.get(key);
    if (flag === undefined || key === 'config') refuse(`${key}: unknown key (the options are the flags in camelCase, e.g. historySize)`);
    const problem = typeProblem(options[flag], value) ?? checkOption(flag, options[flag], options[flag].coerce ? options[flag].coerce(value) : value);
    if (problem) refuse(`${key}: ${problem}`);
  }
  return values;
}

function typeProblem(spec, value) {
  const ok = spec.coerce ? typeof value === 'string' || (Array.isArray(value) && value.every((v) => typeof v === 'string')) : typeof value === spec.type;
  return ok ? undefined : `must be a ${spec.type}${spec.coerce ? ' or a list of strings' : ''}, got ${JSON.stringify(value)}`;
}
