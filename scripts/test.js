#!/usr/bin/env node
// `npm test`: the whole suite as two mocha runs side by side, each a group of
// independent files (own gateways, own Redis processes, ephemeral ports).
// The Redis group spends most of its time waiting on failovers, expiries and
// timeouts, so running it beside the rest takes about the longer group's
// time instead of both together. Each line is prefixed with its group; the
// exit code is the first failing group's. A failing group's summary (its
// failures and their stacks) is printed again at the end, since the two
// groups' lines interleave and a log's tail is often all a reader gets.
import { spawn } from 'node:child_process';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { scriptArgs } from './harness/args.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MOCHA = fileURLToPath(new URL('../node_modules/mocha/bin/mocha.js', import.meta.url));
const GROUPS = { main: '.mocharc.json', redis: '.mocharc.redis.json' };
// Mocha's epilogue starts with this line; everything after it is the summary.
const SUMMARY_START = /^\s*\d+ passing \(/;

scriptArgs({ usage: '', about: 'the whole test suite: the main and Redis groups side by side' });
const started = Date.now();
const results = await Promise.all(Object.entries(GROUPS).map(([name, config]) => run(name, config)));
for (const { name, code, summary } of results) {
  if (code !== 0 && summary.length > 0) {
    console.log(`[${name}] failed; its summary again:`);
    for (const line of summary) console.log(`[${name}] ${line}`);
  }
}
for (const { name, code } of results) console.log(`[${name}] exit ${code}`);
console.log(`npm test took ${Math.round((Date.now() - started) / 1000)} s`);
process.exit(results.find(({ code }) => code !== 0)?.code ?? 0);

function run(name, config) {
  const child = spawn(process.execPath, [MOCHA, '--config', config], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  const summary = [];
  let inSummary = false;
  for (const stream of [child.stdout, child.stderr]) {
    readline.createInterface({ input: stream }).on('line', (line) => {
      console.log(`[${name}] ${line}`);
      if (stream === child.stdout && SUMMARY_START.test(line)) inSummary = true;
      if (inSummary) summary.push(line);
    });
  }
  // 'close', not 'exit': the streams have ended, so every line was read.
  return new Promise((resolve) => child.on('close', (code, signal) => resolve({ name, code: code ?? (signal ? 1 : 0), summary })));
}
