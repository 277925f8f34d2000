// While a worker has work, once a second it reports its figures to the
// primary, which merges them into the cluster view behind GET /stats. Work
// is a socket or connection held, or a figure that moved since the last
// report; a worker with neither reports nothing and measures nothing (its
// event-loop histograms and its periodic GC stop too) until its next
// connection wakes it.
import { getHeapStatistics } from 'node:v8';
import { STATS_INTERVAL_MS } from '../ipc.js';
import { RESOLUTION_MS } from '../loop-delay.js';
import { Ticker } from '../ticker.js';
import { metrics, loopDelay } from '../session/metrics.js';

/**
 * @param {object} options
 * @param {number} options.worker
 * @param {import('./relay.js').WorkerRelay} options.relay
 * @param {import('./gc.js').PeriodicGc} options.gc
 * @param {{received: number, open: number}} options.sockets sockets from the primary
 * @returns {{wake: () => void, stop: () => void}} wake: a connection arrived
 */
export function startStatsReporter({ worker, relay, gc, sockets }) {
  const delay = loopDelay.histogram();
  // Never reset: when this timer runs before the histogram's own after a
  // stall, the reset drops the stall from `delay`; `worst` still has it.
  const sinceStart = loopDelay.histogram();
  let counted = ''; // the counts last reported
  const report = async () => {
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
    const counts = `${figures.connections} ${open} ${received} ${figures.subscriptions} ${figures.published} ${figures.delivered} ${figures.gcRuns}`;
    // Read again now: a socket may have come while the figures were read.
    if (sockets.open === 0 && figures.connections === 0 && sockets.received === received && counts === counted) return void sleep();
    counted = counts;
    relay.reportStats(figures);
  };
  const ticker = new Ticker('stats', STATS_INTERVAL_MS, () => {
    report();
    return true; // the report itself decides, once its figures are read
  });
  const wake = () => {
    if (ticker.running) return;
    loopDelay.set(true);
    gc.wake();
    ticker.start();
  };
  const sleep = () => {
    ticker.stop();
    loopDelay.set(false);
    gc.sleep();
  };
  wake(); // the first report tells the primary this worker is up
  return {
    wake,
    stop() {
      ticker.stop();
      loopDelay.set(false);
    }
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
