#!/usr/bin/env node
// The load generator's command line (lib/loadgen/). Exit codes: 0 the run did
// what was asked, 1 it fell short (see the report's shortfalls), 2 bad flags.
import '../lib/runtime/node-version.js'; // first: an unsupported Node stops here, with one line
import { writeFileSync } from 'node:fs';
import { parseCommandLine, exitOnUsageError } from '../lib/config/cli.js';
import { options } from '../lib/loadgen/options.js';
import { runLoad } from '../lib/loadgen/orchestrator.js';
import { formatSummary } from '../lib/loadgen/report.js';

const config = await parseCommandLine({
  argv: process.argv.slice(2),
  table: options,
  usage: 'loadgen [options]',
  envPrefix: 'LOADGEN',
  epilogue:
    'Every flag can also be set as LOADGEN_<FLAG>. Progress goes to stderr every 5 s; the summary to stdout ' +
    '(to stderr with --json -, so stdout is the JSON alone).'
}).catch(exitOnUsageError);

const report = await runLoad(config).catch(exitOnUsageError);
const json = JSON.stringify(report, null, 2) + '\n';
if (config.json === '-') {
  process.stderr.write(formatSummary(report, config.url));
  process.stdout.write(json);
} else {
  process.stdout.write(formatSummary(report, config.url));
  if (config.json) writeFileSync(config.json, json);
}
process.exitCode = report.shortfalls.length === 0 ? 0 : 1;
