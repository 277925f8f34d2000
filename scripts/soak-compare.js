#!/usr/bin/env node
// Side by side, the figures of soak runs (each a folder `npm run soak` wrote):
// the verdict, what was lost, each worker process's slopes, memory and
// fragmentation, forced GC pauses and event-loop delay after the warm-up.
// What the periodic-GC default was settled from (README, "Soak").
//   node scripts/soak-compare.js DIR [DIR ...]
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { scriptArgs } from './harness/args.js';
import { workerFits, mib } from './soak/verdict.js';
import { quantile } from '../lib/loadgen/quantile.js';

const dirs = scriptArgs({ usage: 'DIR [DIR ...]', allowPositionals: true }).positionals;
if (dirs.length === 0) {
  process.stderr.write('usage: node scripts/soak-compare.js DIR [DIR ...]  (folders written by npm run soak)\n');
  process.exit(2);
}

let columns;
try {
  columns = dirs.map(figures);
} catch (err) {
  process.stderr.write(`soak-compare: ${err.message}\n`);
  process.exit(1);
}
const cell = (v) => String(v).replaceAll('|', '\\|');
const lines = [`| | ${columns.map((c) => c.run).join(' | ')} |`, `|---|${columns.map(() => '---').join('|')}|`];
for (const row of Object.keys(columns[0]).filter((r) => r !== 'run')) lines.push(`| ${row} | ${columns.map((c) => cell(c[row])).join(' | ')} |`);
process.stdout.write(lines.join('\n') + '\n');

function figures(dir) {
  const summary = JSON.parse(readFileSync(path.join(dir, 'summary.json'), 'utf8'));
  const samples = readFileSync(path.join(dir, 'soak.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
  const { options: o, verdict, reports } = summary;
  const ws = reports.ws;
  const warm = samples.filter((s) => s.t >= o.warmupS);
  const workers = warm.flatMap((s) => s.workers);
  const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const median = (xs) => quantile(xs, 0.5);
  const fits = workerFits(samples, o.warmupS).filter((f) => f.points >= 15);
  // gcRuns is a worker's own count: its rise per process is how many forced collections ran.
  const forced = new Map();
  for (const w of workers) forced.set(w.pid, Math.max(forced.get(w.pid) ?? 0, w.gcRuns));
  const rss = mean(workers.map((w) => w.rssBytes));
  const heap = mean(workers.map((w) => w.heapUsedBytes));
  const slopes = (key) => fits.map((f) => mib(f[key])).join(', ');
  return {
    run: `--gc-interval ${o.gcInterval}`,
    verdict: verdict.ok ? `PASS (${verdict.checks.length} checks)` : `FAIL: ${verdict.failed.join('; ')}`,
    'published, lost, gaps, out of order': `${(ws.published ?? 0) + (reports.sse?.published ?? 0)}, ${ws.lost}, ${ws.seqGaps}, ${ws.outOfOrder}`,
    'recovered of reconnects': `${ws.recovered} of ${ws.reconnects}`,
    'worker heap slope, each process with ≥ 15 samples after warm-up (MiB/h)': slopes('heapSlope'),
    'worker RSS slope, same (MiB/h)': slopes('rssSlope'),
    'primary heap less history, RSS (MiB/h)': `${mib(verdict.primary.heapSlope)}, ${mib(verdict.primary.rssSlope)}`,
    'mean worker RSS, heap used; RSS/heap': `${mib(rss)} MiB, ${mib(heap)} MiB; ${(rss / heap).toFixed(2)}`,
    'forced GC pauses': o.gcInterval === 0 ? 'none' : `${[...forced.values()].reduce((a, b) => a + b, 0)} in all, worst ${Math.max(...workers.map((w) => w.gcPauseMaxMs)).toFixed(1)} ms`,
    'event-loop delay after warm-up: median of per-sample p99, max; worst stall': `${median(workers.map((w) => w.loopP99Ms)).toFixed(1)} ms, ${Math.max(...workers.map((w) => w.loopMaxMs)).toFixed(1)} ms; ${verdict.worstStall.ms} ms (at ${Math.round(verdict.worstStall.t)} s)`
  };
}
