#!/usr/bin/env node
// `npm test`: the whole suite as two mocha runs side by side, each a group of
// independent files (own gateways, own Redis processes, ephemeral ports).
// The Redis group spends most of its time waiting on failovers, expiries and
// timeouts, so running it beside the rest takes about the longer group's
// time instead of both together. Each line is prefixed with its group; the
// exit code is the first failing group's.
import { spawn } from 'node:child_process';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { scriptArgs } from './harness/args.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MOCHA = fileURLToPath(new URL('../node_modules/mocha/bin/mocha.js', import.meta.url));
const GROUPS = { main: '.mocharc.json', redis: '.mocharc.redis.json' };

scriptArgs({ usage: '', about: 'the whole test suite: the main and Redis groups side by side' });
const started = Date.now();
const codes = await Promise.all(Object.entries(GROUPS).map(([name, config]) => run(name, config)));
for (const [i, name] of Object.keys(GROUPS).entries()) console.log(`[${name}] exit ${codes[i]}`);
console.log(`npm test took ${Math.round((Date.now() - started) / 1000)} s`);
process.exit(codes.find((code) => code !== 0) ?? 0);

function run(name, config) {
  const child = spawn(process.execPath, [MOCHA, '--config', config], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  for (const stream of [child.stdout, child.stderr]) {
    readline.createInterface({ input: stream }).on('line', (line) => console.log(`[${name}] ${line}`));
  }
  return new Promise((resolve) => child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0))));
}
