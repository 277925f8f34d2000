// Every script's command line: node's parseArgs, plus `--help` (the usage on
// stdout, exit 0) and mistakes told in one line followed by the usage on
// stderr, exit 2, instead of parseArgs' stack trace. Options are declared
// as parseArgs wants them, with a `describe` each for the usage.
import path from 'node:path';
import { parseArgs } from 'node:util';

export const USAGE_EXIT = 2;

/**
 * @param {object} spec
 * @param {string} spec.usage the synopsis after the script's name, e.g. '[options]'
 * @param {string} [spec.about] what the script does, one line
 * @param {Record<string, {type: 'string'|'boolean', default?: any, short?: string, multiple?: boolean, describe?: string}>} [spec.options]
 * @param {boolean} [spec.allowPositionals]
 * @param {string[]} [spec.args] the arguments (default: this process's)
 * @returns {{values: object, positionals: string[], usageError: (message: string) => never}}
 *   usageError: for a mistake parseArgs cannot see (a value out of range): one line, the usage, exit 2
 */
export function scriptArgs({ usage, about, options = {}, allowPositionals = false, args = process.argv.slice(2) }) {
  const text = usageText({ usage, about, options });
  const usageError = (message) => {
    process.stderr.write(`${scriptName()}: ${message}\n${text}`);
    process.exit(USAGE_EXIT);
  };
  const config = { help: { type: 'boolean', default: false } };
  for (const [name, { describe, ...option }] of Object.entries(options)) config[name] = option;
  let parsed;
  try {
    parsed = parseArgs({ args, options: config, allowPositionals, strict: true });
  } catch (err) {
    if (!err.code?.startsWith('ERR_PARSE_ARGS_')) throw err;
    usageError(err.message);
  }
  if (parsed.values.help) {
    process.stdout.write(text);
    process.exit(0);
  }
  delete parsed.values.help;
  return { values: parsed.values, positionals: parsed.positionals, usageError };
}

function usageText({ usage, about, options }) {
  const lines = [`usage: node scripts/${scriptName()} ${usage}`.trimEnd()];
  if (about !== undefined) lines.push('', about);
  const rows = Object.entries(options).map(([name, { type, default: value, describe = '' }]) => {
    const flag = `--${name}${type === 'string' ? ' VALUE' : ''}`;
    const fallback = value === undefined || value === false ? '' : ` (default: ${value})`;
    return [flag, `${describe}${fallback}`.trim()];
  });
  rows.push(['--help', 'this text']);
  const width = Math.max(...rows.map(([flag]) => flag.length));
  lines.push('', 'options:', ...rows.map(([flag, describe]) => `  ${flag.padEnd(width)}  ${describe}`.trimEnd()));
  return lines.join('\n') + '\n';
}

function scriptName() {
  const script = process.argv[1] ?? 'script';
  const dir = path.basename(path.dirname(script));
  return dir === 'scripts' ? path.basename(script) : `${dir}/${path.basename(script)}`;
}
