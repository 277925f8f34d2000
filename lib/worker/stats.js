// While a worker has work, once a second it reports its figures to the
// primary, which merges them into the cluster view behind GET /stats. Work
// is a socket or connection held, or a figure that moved since the last
// report; a worker with neither reports nothing and measures nothing (its
// event-loop sampler and its periodic GC stop too) until its next
// connection wakes it. The second is the sampler's (../loop-delay.js): a
// worker holding connections arms no timer of its own for its report. One
// whose counts stand still reports every HEARTBEAT_S seconds only, so that
// the primary is not woken for nothing (its memory figures stay that fresh).
import { getHeapStatistics } from 'node:v8';
import { delayFigures } from '../runtime/loop-delay.js';
import { workerCounts } from '../session/metrics.js';

const HEARTBEAT_S = 10;

/**
 * @param {object} options
 * @param {number} options.worker
 * @param {import('./relay.js').WorkerRelay} options.relay
 * @param {import('./gc.js').PeriodicGc} options.gc
 * @param {{received: number, open: number}} options.sockets sockets from the primary
 * @param {import('../runtime/loop-delay.js').LoopDelay} options.loopDelay the worker's event-loop sampler, run while it has work
 * @returns {{wake: () => void, stop: () => void}} wake: a connection arrived
 */
export function startStatsReporter({ worker, relay, gc, sockets, loopDelay }) {
  const delay = loopDelay.window();
  let worst = 0; // the longest delay since start, ms
  let lastCounts = ''; // the counts last reported
  let quiet = 0; // seconds since the last report, while the counts stood still
  const report = async () => {
    const { open, received } = sockets; // one moment, for the primary's arithmetic
    const ms = (ns) => Math.round(ns / 1e4) / 100;
    const read = delayFigures(delay);
    delay.reset();
    const max = ms(read.max);
    worst = Math.max(worst, max);
    const { connections, streams, subscriptions, published, delivered, gcRuns } = await workerCounts();
    const counted = { connections, streams, sockets: open, received, subscriptions, published, delivered, gcRuns };
    const counts = Object.values(counted).join(' ');
    // Read again now: a socket may have come while the figures were read.
    if (sockets.open === 0 && counted.connections === 0 && sockets.received === received && counts === lastCounts) return void sleep();
    if (counts === lastCounts && ++quiet < HEARTBEAT_S) return;
    quiet = 0;
    lastCounts = counts;
    const memory = memoryUsage();
    relay.reportStats({
      worker,
      pid: process.pid,
      at: Date.now(), // when measured: the cluster view reaches /stats a second or two later
      ...counted,
      gcPauseMs: { last: round(gc.lastPauseMs), max: round(gc.maxPauseMs) },
      eventLoopDelayMs: { p50: ms(read.p50), p99: ms(read.p99), max, worst },
      rssBytes: memory.rss,
      heapUsedBytes: memory.heapUsed
    });
  };
  loopDelay.eachSecond(report);
  const wake = () => {
    if (loopDelay.running) return;
    loopDelay.set(true);
    gc.wake();
  };
  const sleep = () => {
    loopDelay.set(false);
    gc.sleep();
  };
  wake(); // the first report tells the primary this worker is up
  return {
    wake,
    stop() {
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

function round(x) {
  return Math.round(x * 100) / 100;
}
