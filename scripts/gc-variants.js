#!/usr/bin/env node
// The stall each manual GC variant V8 offers through gc() costs, side by side
// in one run, on a heap shaped like a worker's (15,000 connection-like
// objects, some replaced between rounds): the longest gap between 1 ms timer
// ticks while one collection runs. It is what settled the gentler variants
// the soak's GC question asked about (README, "Soak").
//   node --expose-gc --max-semi-space-size=2 scripts/gc-variants.js [--rounds 6]
import { scriptArgs } from './harness/args.js';
import { performance } from 'node:perf_hooks';
import { quantile } from '../lib/loadgen/quantile.js';

const { values } = scriptArgs({ usage: '[--rounds 6]', options: { rounds: { type: 'string', default: '6' } } });
const rounds = Number(values.rounds);
if (typeof globalThis.gc !== 'function' || !(rounds >= 1)) {
  process.stderr.write('usage: node --expose-gc --max-semi-space-size=2 scripts/gc-variants.js [--rounds N]\n');
  process.exit(2);
}

const VARIANTS = [
  ['no collection (the baseline)', null],
  ['gc(): full, synchronous (--gc-interval)', undefined],
  ["gc({type: 'major', execution: 'async'})", { type: 'major', execution: 'async' }],
  ["gc({type: 'minor'}): young generation only", { type: 'minor' }]
];

const held = Array.from({ length: 15000 }, (_, i) => ({ id: i, buf: Buffer.alloc(64), channels: new Map([[`c${i}`, { seq: i, name: 'x'.repeat(50) }]]), pad: new Array(20).fill(i) }));

const rows = [];
for (const [label, options] of VARIANTS) {
  const gaps = [];
  for (let r = 0; r < rounds; r++) {
    // Some garbage and some promotions, as traffic leaves between two collections.
    for (let i = 0; i < 3000; i++) held[(r * 3000 + i) % held.length].last = { frame: new Array(50).fill(r) };
    await longestGap(100);
    const watching = longestGap(400);
    if (options !== null) setTimeout(() => globalThis.gc(options), 50);
    gaps.push(await watching);
  }
  rows.push(`| ${label} | ${quantile(gaps, 0.5).toFixed(1)} | ${Math.max(...gaps).toFixed(1)} |`);
}
process.stdout.write(['| variant | longest loop gap, median (ms) | max (ms) |', '|---|---|---|', ...rows].join('\n') + '\n');

/** The longest gap between ticks of a 1 ms interval over `ms`. */
function longestGap(ms) {
  return new Promise((resolve) => {
    let last = performance.now();
    let longest = 0;
    const end = last + ms;
    const timer = setInterval(() => {
      const now = performance.now();
      longest = Math.max(longest, now - last);
      last = now;
      if (now > end) {
        clearInterval(timer);
        resolve(longest);
      }
    }, 1);
  });
}
