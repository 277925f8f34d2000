// Once a second each worker reports its figures to the primary, which merges
// them into the cluster view served at GET /stats.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';
import { STATS_INTERVAL_MS } from '../ipc.js';
import { metrics } from './metrics.js';

// The histogram times a timer of this period, so each sample includes the
// period itself; it is subtracted to report the delay alone.
const RESOLUTION_MS = 10;

/**
 * @param {object} options
 * @param {number} options.worker
 * @param {import('./relay.js').WorkerRelay} options.relay
 * @param {import('./gc.js').PeriodicGc} options.gc
 * @param {{received: number, open: number}} options.sockets sockets from the primary
 * @returns {() => void} stops reporting
 */
export function startStatsReporter({ worker, relay, gc, sockets }) {
  const delay = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  delay.enable();
  // Never reset: when this timer runs before the histogram's own after a
  // stall, the reset drops the stall from `delay`; `worst` still has it.
  const sinceStart = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  sinceStart.enable();
  const timer = setInterval(async () => {
    const { open, received } = sockets; // one moment, for the primary's arithmetic
    const ms = (ns) => Math.max(0, Math.round(ns / 1e4) / 100 - RESOLUTION_MS);
    const max = ms(delay.max);
    const memory = memoryUsage();
    const figures = {
      worker,
      pid: process.pid,
      at: Date.now(), // when measured: the cluster view reaches /stats a second or two later
      connections: await value(metrics.connections), // both transports
      streams: await value(metrics.connections, { transport: 'sse' }),
      sockets: open,
      received,
      subscriptions: await value(metrics.subscriptions),
      published: await value(metrics.published),
      delivered: await value(metrics.delivered),
      gcRuns: await value(metrics.gcRuns),
      gcPauseMs: { last: round(gc.lastPauseMs), max: round(gc.maxPauseMs) },
      eventLoopDelayMs: { p50: ms(delay.percentile(50)), p99: ms(delay.percentile(99)), max, worst: ms(sinceStart.max) },
      rssBytes: memory.rss,
      heapUsedBytes: memory.heapUsed
    };
    delay.reset();
    relay.reportStats(figures);
  }, STATS_INTERVAL_MS);
  timer.unref();
  return () => {
    clearInterval(timer);
    delay.disable();
    sinceStart.disable();
  };
}

// process.memoryUsage reads /proc/self/status, which fails with EMFILE when
// the worker is out of descriptors: a missing figure, not a reason to crash.
function memoryUsage() {
  try {
    return process.memoryUsage();
  } catch {
    return { rss: null, heapUsed: getHeapStatistics().used_heap_size };
  }
}

/** The sum of a metric's samples, or of those with `labels`. */
async function value(metric, labels = {}) {
  const { values } = await metric.get();
  const matches = (v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l);
  return values.reduce((sum, v) => (matches(v) ? sum + v.value : sum), 0);
}

function round(x) {
  return Math.round(x * 100) / 100;
}
