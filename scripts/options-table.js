#!/usr/bin/env node
// Prints a command's options as the Markdown table the README holds, from its
// options table, so the README cannot drift from the code (a test compares).
//   node scripts/options-table.js gateway|loadgen
import { fileURLToPath } from 'node:url';
import { scriptArgs } from './harness/args.js';
import { options as gateway } from '../lib/config/options.js';
import { options as loadgen } from '../lib/loadgen/options.js';
import { envVariable } from '../lib/config/cli.js';

export const TABLES = { gateway: [gateway, 'GATEWAY'], loadgen: [loadgen, 'LOADGEN'] };

export function optionsTable(name) {
  const [table, prefix] = TABLES[name];
  const rows = Object.entries(table).map(([flag, spec]) => {
    const shown = spec.defaultDescription ?? (spec.default === undefined ? '(unset)' : String(spec.default));
    const env = envVariable(prefix, flag);
    return `| \`--${flag}\` | \`${env}\` | ${shown} | ${spec.describe} |`;
  });
  return ['| flag | environment | default | meaning |', '|---|---|---|---|', ...rows].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(optionsTable(scriptArgs({ usage: 'gateway|loadgen', allowPositionals: true }).positionals[0] ?? 'gateway'));
