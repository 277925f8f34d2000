#!/usr/bin/env node
// Prints the gateway's options as the Markdown table the README holds, from
// lib/config.js, so the README cannot drift from the code (a test compares).
//   node scripts/options-table.js
import { fileURLToPath } from 'node:url';
import { options } from '../lib/config.js';

export function optionsTable() {
  const rows = Object.entries(options).map(([name, spec]) => {
    const shown = spec.defaultDescription ?? (spec.default === undefined ? '(unset)' : String(spec.default));
    const env = `GATEWAY_${name.toUpperCase().replaceAll('-', '_')}`;
    return `| \`--${name}\` | \`${env}\` | ${shown} | ${spec.describe} |`;
  });
  return ['| flag | environment | default | meaning |', '|---|---|---|---|', ...rows].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(optionsTable());
