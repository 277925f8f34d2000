// Builds a yargs command line from an options table (see lib/config/options.js for the
// table's shape). Shared by bin/gateway.js and bin/loadgen.js so every tool
// validates, documents and reports bad flags the same way: a clear message and
// exit code 2, never a stack trace.
import yargs from 'yargs';
import { UsageError } from '../core/errors.js';
import { originsOf, unknownFlagProblem, withOrigins, camel, envVariable } from './origins.js';

const USAGE_ERROR = 2;

export { UsageError, camel, envVariable };

/**
 * Checks one value against its table entry.
 * @param {string} [given] the value as it was written (a flag's text), for the message
 * @returns {string|undefined} a message when the value is not acceptable
 */
export function checkOption(name, spec, value, written = value) {
  const given = spec.secret === undefined ? written : 'a secret, not shown';
  if (value === undefined) return spec.required ? `--${name} is required` : undefined;
  if (Array.isArray(value) && !spec.array && !spec.coerce) return `--${name} is given ${value.length} times (${given}): give it once`;
  const wrong = (why) => `--${name} must ${why}, got ${given === '' ? '""' : given}${spec.type === 'number' ? ` (${accepted(spec)})` : ''}`;
  if (spec.type === 'number' && !Number.isFinite(value)) return wrong('be a number');
  if (spec.integer && !Number.isInteger(value)) return wrong('be an integer');
  if (spec.min !== undefined && value < spec.min) return wrong(`be at least ${spec.min}`);
  if (spec.max !== undefined && value > spec.max) return wrong(`be at most ${spec.max}`);
  if (spec.choices && !spec.choices.includes(value)) return wrong(`be one of ${spec.choices.join(', ')}`);
  return spec.check ? spec.check(value) : undefined;
}

/** What a number option accepts, in words: "an integer from 0 to 65535". */
function accepted({ integer, min, max }) {
  const kind = integer ? 'an integer' : 'a number';
  if (min !== undefined && max !== undefined) return `${kind} from ${min} to ${max}`;
  if (min !== undefined) return `${kind} of at least ${min}`;
  return max !== undefined ? `${kind} of at most ${max}` : kind;
}

/**
 * Fills defaults and validates a plain object of options (camelCase keys).
 * Used by the CLI and directly by code that builds options itself.
 * @param {(name: string) => {given?: string}|undefined} [origin] what was written for each option (./option-origins.js)
 * @throws {UsageError}
 */
export function resolveOptions(table, given = {}, origin = () => undefined) {
  const out = {};
  for (const [name, spec] of Object.entries(table)) {
    const key = camel(name);
    let value = given[key] ?? (typeof spec.default === 'function' ? spec.default() : spec.default);
    if (spec.coerce && value !== undefined) value = spec.coerce(value);
    const problem = checkOption(name, spec, value, origin(name)?.given ?? value);
    if (problem) throw new UsageError(problem);
    out[key] = value;
  }
  return out;
}

/**
 * Parses argv against the table. Environment variables `<envPrefix>_<FLAG>`
 * fill flags not given on the command line; with `configFile`, the values of
 * the file the `config` option names fill those given neither way (its keys
 * that are no flag, such as a gateway's namespaces, are kept as they are).
 * A usage error names the environment variable or the file key an option
 * came from, and the text written there.
 * @param {object} options
 * @param {Record<string, string>} [options.env] variables read as if they were in
 *   the environment (those a process took out of its own), under the real ones
 * @param {(path: string) => object} [options.configFile] reads and checks the file (camelCase keys)
 * @param {(resolved: object) => void} [options.check] checks the options together (throws UsageError)
 * @returns {Promise<object>} the resolved options, camelCase keys
 */
export async function parseCommandLine({ argv, table, usage, envPrefix, epilogue, configFile, env = {}, check = () => {} }) {
  const unknown = unknownFlagProblem(argv, table);
  if (unknown) throw new UsageError(unknown);
  const parser = () => buildParser({ argv, table, usage, envPrefix, epilogue });
  const args = await parseWith(parser(), env);
  const file = configFile === undefined || args.config === undefined ? undefined : configFile(args.config);
  const origin = originsOf({ argv, table, envPrefix, env, file, filePath: args.config });
  try {
    if (file === undefined) {
      const resolved = resolveOptions(table, args, origin);
      check(resolved);
      return resolved;
    }
    const names = new Set(Object.keys(table).map(camel));
    const flags = Object.fromEntries(Object.entries(file).filter(([key]) => names.has(key)));
    const resolved = resolveOptions(table, await parseWith(parser().config(flags), env), origin);
    for (const [key, value] of Object.entries(file)) if (!Object.hasOwn(resolved, key)) resolved[key] = value;
    check(resolved);
    return resolved;
  } catch (err) {
    throw err instanceof UsageError ? new UsageError(withOrigins(err.message, origin)) : err;
  }
}

// yargs reads process.env itself, synchronously within parse(): `env` is
// there for that call only, so nothing forked meanwhile can inherit it.
function parseWith(parser, env) {
  const lent = Object.keys(env).filter((name) => process.env[name] === undefined);
  for (const name of lent) process.env[name] = env[name];
  try {
    return parser.parse();
  } finally {
    for (const name of lent) delete process.env[name];
  }
}

function buildParser({ argv, table, usage, envPrefix, epilogue }) {
  const parser = yargs(argv)
    .scriptName(usage.split(' ')[0])
    .usage(`Usage: ${usage}`)
    .strict()
    .parserConfiguration({ 'camel-case-expansion': true, 'strip-dashed': true })
    .help()
    .version(false)
    .wrap(Math.min(100, process.stdout.columns || 100))
    .fail((message, err) => {
      throw new UsageError(message || err.message);
    });
  if (envPrefix) parser.env(envPrefix);
  if (epilogue) parser.epilogue(epilogue);
  for (const [name, spec] of Object.entries(table)) {
    parser.option(name, {
      type: spec.type,
      array: spec.array,
      describe: spec.describe,
      default: typeof spec.default === 'function' ? undefined : spec.default,
      defaultDescription: spec.defaultDescription,
      requiresArg: spec.type !== 'boolean'
    });
  }
  return parser;
}

/** Prints a usage error and exits with code 2; rethrows anything else. */
export function exitOnUsageError(err) {
  if (!(err instanceof UsageError)) throw err;
  process.stderr.write(`error: ${err.message}\nRun with --help for the options.\n`);
  process.exit(USAGE_ERROR);
}

/** Splits a comma list into trimmed, non-empty items. */
export function commaList(value) {
  if (Array.isArray(value)) return value.flatMap(commaList);
  return String(value).split(',').map((s) => s.trim()).filter(Boolean);
}
