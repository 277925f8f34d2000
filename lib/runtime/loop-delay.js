// The process's event-loop delay, from one sampler: a timer whose lateness
// is the delay. It runs only while the process has work (its owner says so:
// lib/worker/stats.js, lib/primary/index.js), every COARSE_MS while the loop
// is nearly idle and every FINE_MS once it is busy (a second in which it
// worked BUSY_SHARE of the time or more). A process holding idle connections
// thus wakes once a second for it, not the hundred of a delay
// histogram (prom-client's own event-loop metric keeps one enabled for
// ever). Whatever the pace, a stall longer than the period delays a tick and
// is seen; the coarse pace misses shorter ones only while the loop is nearly
// idle, which has few to miss. Every reader (the stats report, the
// Prometheus metrics) has its own window of the samples and resets it when
// it has read it. Once a second the sampler also runs what the process does
// each second while it has work (the worker's stats report), so it arms no
// other periodic timer for it.
import { createHistogram, performance } from 'node:perf_hooks';
import { require } from './require.js';
import { Ticker } from './ticker.js';

const client = require('prom-client');
const defaults = require('prom-client/lib/defaultMetrics.js');

export const FINE_MS = 10;
export const COARSE_MS = 1000;
const BUSY_SHARE = 0.05;
const SECOND_MS = 1000;
// A window's range and precision, in ns: 1 µs to 100 s, to two significant
// figures. Node's default (any integer, three figures) makes a percentile
// walk so many buckets that reading a window cost 0.3 ms, more than a
// second of an idle worker's sampling.
const WINDOW = { lowest: 1000, highest: 1e11, figures: 2 };

export class LoopDelay {
  constructor() {
    this.windows = [];
    this.secondly = []; // what runs once a second while the sampler runs
    this.ticker = new Ticker('loop-delay', COARSE_MS, () => this.tick());
    this.last = 0; // performance.now() at the previous tick
    this.secondFrom = 0; // performance.now() when the current second began
    this.utilization = undefined; // the loop's utilization figures then
  }

  /** A window of the samples, for one reader: read it, then reset() it. */
  window() {
    const window = createHistogram(WINDOW);
    this.windows.push(window);
    return window;
  }

  /** Runs `work` once a second while the sampler runs. */
  eachSecond(work) {
    this.secondly.push(work);
  }

  get running() {
    return this.ticker.running;
  }

  /** @param {boolean} on whether the process has work to measure */
  set(on) {
    if (on === this.ticker.running) return;
    if (!on) return void this.ticker.stop();
    this.ticker.every(COARSE_MS);
    this.last = this.secondFrom = performance.now();
    this.utilization = performance.eventLoopUtilization();
    this.ticker.start();
  }

  tick() {
    const now = performance.now();
    const lateNs = Math.max(WINDOW.lowest, Math.round((now - this.last - this.ticker.intervalMs) * 1e6));
    this.last = now;
    for (const window of this.windows) window.record(lateNs);
    if (now - this.secondFrom < SECOND_MS) return true;
    const utilization = performance.eventLoopUtilization();
    const busy = performance.eventLoopUtilization(utilization, this.utilization).utilization >= BUSY_SHARE;
    this.utilization = utilization;
    this.secondFrom = now;
    this.ticker.every(busy ? FINE_MS : COARSE_MS);
    for (const work of this.secondly) work();
    return true;
  }
}

/** A window's figures in ns, all 0 while it holds no sample. */
export function delayFigures(window) {
  if (window.count === 0) return { min: 0, max: 0, mean: 0, stddev: 0, p50: 0, p90: 0, p99: 0 };
  const { min, max, mean, stddev } = window;
  return { min, max, mean, stddev, p50: window.percentile(50), p90: window.percentile(90), p99: window.percentile(99) };
}

/**
 * Registers prom-client's default metrics but `except` (names from its
 * metricsList), and the event-loop delay ones under prom-client's names,
 * read from a window of `loopDelay` that each scrape resets.
 * @param {{register?: object, prefix?: string, except?: string[]}} options
 */
export function collectDefaultMetrics(loopDelay, { register, prefix = '', except = [] } = {}) {
  for (const name of defaults.metricsList) {
    if (name !== 'eventLoopLag' && !except.includes(name)) require(`prom-client/lib/metrics/${name}.js`)(register, { prefix });
  }
  const window = loopDelay.window();
  const registers = register === undefined ? undefined : [register];
  const gauge = (suffix, help, aggregator, collect) => new client.Gauge({ name: `${prefix}nodejs_eventloop_lag${suffix}`, help, registers, aggregator, collect });
  const figures = [];
  // Registered first, so collected first: its collect sets every other
  // figure, as prom-client's does; its own is the delay of a setImmediate now.
  gauge('_seconds', 'Lag of event loop in seconds.', 'average', async function () {
    const read = delayFigures(window);
    for (const [figure, key] of figures) figure.set(read[key] / 1e9);
    window.reset();
    const start = process.hrtime.bigint();
    await new Promise(setImmediate);
    this.set(Number(process.hrtime.bigint() - start) / 1e9);
  });
  const read = {
    _min_seconds: ['The minimum recorded event loop delay.', 'min', 'min'],
    _max_seconds: ['The maximum recorded event loop delay.', 'max', 'max'],
    _mean_seconds: ['The mean of the recorded event loop delays.', 'average', 'mean'],
    _stddev_seconds: ['The standard deviation of the recorded event loop delays.', 'average', 'stddev'],
    _p50_seconds: ['The 50th percentile of the recorded event loop delays.', 'average', 'p50'],
    _p90_seconds: ['The 90th percentile of the recorded event loop delays.', 'average', 'p90'],
    _p99_seconds: ['The 99th percentile of the recorded event loop delays.', 'average', 'p99']
  };
  for (const [suffix, [help, aggregator, key]] of Object.entries(read)) figures.push([gauge(suffix, help, aggregator), key]);
}
