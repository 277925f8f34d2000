// Merges the figures the workers report (once a second while they have work)
// into the cluster view behind GET /stats on the operator listener
// (lib/primary/metrics.js). The view is built when asked, at most once a
// second: nobody asking costs nothing.
import { getHeapStatistics } from 'node:v8';
import { STATS_INTERVAL_MS } from '../core/ipc.js';
import { ticks } from '../runtime/ticker.js';

const TOTALS = ['connections', 'subscriptions', 'published', 'delivered'];

/**
 * @param {import('./relay.js').PrimaryRelay} relay
 * @returns {{latest: () => object|null}} latest: the view, null until a worker has reported
 */
export function clusterStats(relay) {
  const started = Date.now();
  let previous = null; // {at, byPid: pid -> the worker's figures then}
  let latest = null;
  const build = (now) => {
    const workers = [...relay.figures.values()].sort((a, b) => a.worker - b.worker);
    const totals = Object.fromEntries(TOTALS.map((k) => [k, workers.reduce((sum, w) => sum + w[k], 0)]));
    const memory = process.memoryUsage();
    const stats = {
      at: now,
      uptimeS: Math.round((now - started) / 100) / 10,
      primary: {
        pid: process.pid,
        rssBytes: memory.rss,
        heapUsedBytes: memory.heapUsed,
        heapLimitBytes: getHeapStatistics().heap_size_limit,
        busy: relay.busy,
        timerTicks: Object.fromEntries(ticks), // each periodic timer's, by name: an idle primary's stay still
        ...relay.engine.figures()
      },
      workers,
      totals,
      rates: rates(previous, workers, now)
    };
    previous = { at: now, byPid: new Map(workers.map((w) => [w.pid, w])) };
    return stats;
  };
  return {
    latest() {
      if (relay.figures.size === 0) return null;
      const now = Date.now();
      if (latest === null || now - latest.at >= STATS_INTERVAL_MS) latest = build(now);
      return latest;
    }
  };
}

/**
 * Messages per second from each worker's own counters since `previous`: a
 * worker that died takes its counts out of the totals, which must not read
 * as a drop to 0, and a new worker counts from 0.
 * @param {{at: number, byPid: Map<number, object>} | null} previous
 * @param {object[]} workers the figures each live worker last reported
 * @param {number} now
 */
export function rates(previous, workers, now) {
  const perSec = (k) => {
    if (previous === null) return 0;
    const counted = workers.reduce((sum, w) => sum + w[k] - (previous.byPid.get(w.pid)?.[k] ?? 0), 0);
    return Math.round((counted * 1000) / (now - previous.at));
  };
  return { publishedPerSec: perSec('published'), deliveredPerSec: perSec('delivered') };
}
