// Builds a yargs command line from an options table (see lib/config.js for the
// table's shape). Shared by bin/gateway.js and bin/loadgen.js so every tool
// validates, documents and reports bad flags the same way: a clear message and
// exit code 2, never a stack trace.
import yargs from 'yargs';
import { UsageError } from './errors.js';

const USAGE_ERROR = 2;

export { UsageError };

/**
 * Checks one value against its table entry.
 * @returns {string|undefined} a message when the value is not acceptable
 */
export function checkOption(name, spec, value) {
  if (value === undefined) return spec.required ? `--${name} is required` : undefined;
  if (spec.type === 'number' && !Number.isFinite(value)) return `--${name} must be a number, got ${value}`;
  if (spec.integer && !Number.isInteger(value)) return `--${name} must be an integer, got ${value}`;
  if (spec.min !== undefined && value < spec.min) return `--${name} must be at least ${spec.min}, got ${value}`;
  if (spec.max !== undefined && value > spec.max) return `--${name} must be at most ${spec.max}, got ${value}`;
  if (spec.choices && !spec.choices.includes(value)) return `--${name} must be one of ${spec.choices.join(', ')}, got ${value}`;
  return spec.check ? spec.check(value) : undefined;
}

/**
 * Fills defaults and validates a plain object of options (camelCase keys).
 * Used by the CLI and directly by code that builds options itself.
 * @throws {UsageError}
 */
export function resolveOptions(table, given = {}) {
  const out = {};
  for (const [name, spec] of Object.entries(table)) {
    const key = camel(name);
    let value = given[key] ?? (typeof spec.default === 'function' ? spec.default() : spec.default);
    if (spec.coerce && value !== undefined) value = spec.coerce(value);
    const problem = checkOption(name, spec, value);
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
 * @param {object} options
 * @param {Record<string, string>} [options.env] variables read as if they were in
 *   the environment (those a process took out of its own), under the real ones
 * @param {(path: string) => object} [options.configFile] reads and checks the file (camelCase keys)
 * @returns {Promise<object>} the resolved options, camelCase keys
 */
export async function parseCommandLine({ argv, table, usage, envPrefix, epilogue, configFile, env = {} }) {
  const args = await parseWith(buildParser({ argv, table, usage, envPrefix, epilogue }), env);
  if (configFile === undefined || args.config === undefined) return resolveOptions(table, args);
  const file = configFile(args.config);
  const names = new Set(Object.keys(table).map(camel));
  const flags = Object.fromEntries(Object.entries(file).filter(([key]) => names.has(key)));
  const resolved = resolveOptions(table, await parseWith(buildParser({ argv, table, usage, envPrefix, epilogue }).config(flags), env));
  for (const [key, value] of Object.entries(file)) if (!Object.hasOwn(resolved, key)) resolved[key] = value;
  return resolved;
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

/** The environment variable that sets option `name` under `prefix`: GATEWAY_JWT_SECRET for jwt-secret. */
export function envVariable(prefix, name) {
  return `${prefix}_${name.toUpperCase().replaceAll('-', '_')}`;
}

export function camel(name) {
  return name.replace(/-([a-z])/g, (_, c) => c.toUpperCase());
}

/** Splits a comma list into trimmed, non-empty items. */
export function commaList(value) {
  if (Array.isArray(value)) return value.flatMap(commaList);
  return String(value).split(',').map((s) => s.trim()).filter(Boolean);
}
