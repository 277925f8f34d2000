// Merges the figures each worker reports every second into the cluster view
// behind GET /stats on the operator listener (lib/primary/metrics.js).
import { getHeapStatistics } from 'node:v8';
import { STATS_INTERVAL_MS } from '../ipc.js';

const TOTALS = ['connections', 'subscriptions', 'published', 'delivered'];

/**
 * @param {import('./relay.js').PrimaryRelay} relay
 * @returns {{latest: () => object|null, stop: () => void}}
 */
export function startClusterStats(relay) {
  const started = Date.now();
  let previous = null;
  let latest = null;
  const timer = setInterval(() => {
    const workers = [...relay.figures.values()].sort((a, b) => a.worker - b.worker);
    const totals = Object.fromEntries(TOTALS.map((k) => [k, workers.reduce((sum, w) => sum + w[k], 0)]));
    const now = Date.now();
    const perSec = (k) => (previous ? Math.max(0, ((totals[k] - previous.totals[k]) * 1000) / (now - previous.at)) : 0);
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
        ...relay.engine.figures()
      },
      workers,
      totals,
      rates: { publishedPerSec: Math.round(perSec('published')), deliveredPerSec: Math.round(perSec('delivered')) }
    };
    previous = { at: now, totals };
    latest = stats;
  }, STATS_INTERVAL_MS);
  timer.unref();
  return { latest: () => latest, stop: () => clearInterval(timer) };
}
