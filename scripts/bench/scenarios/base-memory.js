// base-memory: what a worker holds before its first client, next to what any
// worker built on Node and ws must hold: a forked process with nothing
// loaded, and one with only an HTTP server and a ws server on it. The
// gateway's figure is the mean of its workers after they have settled.
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { withServer } from '../servers.js';
import { workersReporting } from '../measure.js';
import { smapsOf } from '../smaps.js';
import { runResult } from '../result.js';
import { track } from '../children.js';

const FLOOR_WORKER = fileURLToPath(new URL('../floor-worker.js', import.meta.url));
const MB = 1e6; // the unit
// The flag the gateway gives its workers, so the floors are measured alike.
const WORKER_NODE_ARGS = ['--max-semi-space-size=2'];

export async function baseMemory(opts) {
  const results = [];
  for (const mode of ['bare', 'http+ws']) {
    const child = track(fork(FLOOR_WORKER, ['--mode', mode], { execArgv: WORKER_NODE_ARGS, stdio: 'ignore' }));
    const [memory] = await once(child, 'message');
    results.push(result(`node, forked worker: ${mode === 'bare' ? 'nothing loaded' : 'http + ws only'}`, [memory]));
  }
  results.push(
    await withServer('gateway', ['--workers', String(opts.workers)], async (server) => {
      const stats = await workersReporting(server, opts.workers);
      await sleep(opts.settle * 1000 + 1500);
      return result('gateway worker', stats.workers.map((w) => smapsOf(w.pid)));
    })
  );
  return results;
}

function result(variant, samples) {
  const mean = (key) => samples.reduce((sum, s) => sum + s[key], 0) / samples.length / MB;
  return runResult({ scenario: 'base-memory', variant, figures: { workerRssMB: mean('rssBytes'), workerPrivateMB: mean('privateBytes') } });
}
