// Where each option's value came from (the command line, an environment
// variable, the config file or its default) and what was typed there, so a
// usage error names what the person wrote: `GATEWAY_PORT=abc`, not the
// number yargs made of it. Also catches a mistyped flag before yargs does,
// with the nearest known one.
import { nearest } from './nearest.js';

/**
 * @typedef {object} Origin
 * @property {'flag'|'env'|'file'|'default'} where
 * @property {string} label what to call it in a message: --port, GATEWAY_PORT, the config file's key
 * @property {string} [given] the text given there, before any conversion
 */

/** The environment variable that sets option `name` under `prefix`: GATEWAY_JWT_SECRET for jwt-secret. */
export function envVariable(prefix, name) {
  return `${prefix}_${name.toUpperCase().replaceAll('-', '_')}`;
}

export function camel(name) {
  return name.replace(/-([a-z])/g, (_, c) => c.toUpperCase());
}

function kebab(key) {
  return key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

/**
 * @param {object} options
 * @param {string[]} options.argv
 * @param {object} options.table the options table
 * @param {string} [options.envPrefix]
 * @param {Record<string, string>} [options.env] variables read as if in the environment (under the real ones)
 * @param {object} [options.file] the config file's values, camelCase keys
 * @param {string} [options.filePath]
 * @returns {(name: string) => Origin|undefined} undefined for a name not in the table
 */
export function originsOf({ argv, table, envPrefix, env = {}, file = {}, filePath }) {
  const flags = flagsGiven(argv, table).given;
  return (name) => {
    const spec = table[name];
    if (spec === undefined) return undefined;
    if (flags.has(name)) return { where: 'flag', label: `--${name}`, given: flags.get(name).join(', ') };
    const variable = envPrefix && envVariable(envPrefix, name);
    const fromEnv = variable && (process.env[variable] ?? env[variable]);
    if (fromEnv !== undefined && fromEnv !== '') return { where: 'env', label: variable, given: fromEnv };
    if (Object.hasOwn(file, camel(name))) return { where: 'file', label: `${camel(name)} in ${filePath}`, given: JSON.stringify(file[camel(name)]) };
    return { where: 'default', label: `--${name}` };
  };
}

/**
 * A flag on the command line that is not in the table, with the nearest
 * one that is.
 * @returns {string|undefined} the message, or undefined when every flag is known
 */
export function unknownFlagProblem(argv, table) {
  const { unknown } = flagsGiven(argv, table);
  if (unknown.length === 0) return undefined;
  const guess = nearest(unknown[0].replace(/^no-/, ''), Object.keys(table));
  return `unknown option --${unknown[0]}${guess === undefined ? '' : `: did you mean --${guess}?`}`;
}

/**
 * Names every flag written on the command line to the text given with it.
 * @returns {{given: Map<string, string[]>, unknown: string[]}}
 */
function flagsGiven(argv, table) {
  const given = new Map();
  const unknown = [];
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i];
    if (token === '--') break;
    if (!token.startsWith('--')) continue;
    const equals = token.indexOf('=');
    const written = equals === -1 ? token.slice(2) : token.slice(2, equals);
    if (written === 'help') continue;
    const name = optionName(written, table);
    if (name === undefined) {
      unknown.push(written);
      continue;
    }
    const spec = table[name];
    let text = equals === -1 ? undefined : token.slice(equals + 1);
    if (text === undefined && spec.type === 'boolean') text = String(!written.startsWith('no-') || written === name);
    else if (text === undefined && argv[i + 1] !== undefined && !argv[i + 1].startsWith('--')) text = argv[++i];
    given.set(name, [...(given.get(name) ?? []), text ?? '(nothing)']);
  }
  return { given, unknown };
}

/** The table's name for a flag as written: kebab or camelCase, a boolean's --no- form. */
function optionName(written, table) {
  for (const name of [written, kebab(written)]) if (Object.hasOwn(table, name)) return name;
  if (!written.startsWith('no-')) return undefined;
  const negated = optionName(written.slice(3), table);
  return negated !== undefined && table[negated].type === 'boolean' ? negated : undefined;
}

/**
 * The message with each option it names that was set by an environment
 * variable or the config file followed by where, once:
 * "--pusher-secret (from GATEWAY_PUSHER_SECRET) needs --pusher-app-id".
 * @param {string} message
 * @param {(name: string) => Origin|undefined} origin
 */
export function withOrigins(message, origin) {
  const seen = new Set();
  return message.replace(/--([a-z][a-z0-9-]*)/g, (flag, name) => {
    if (seen.has(name)) return flag;
    seen.add(name);
    const from = origin(name);
    return from?.where === 'env' || from?.where === 'file' ? `${flag} (from ${from.label})` : flag;
  });
}
