// Node's default process metrics, with the event-loop delay sampled only
// while the process has work. A delay histogram samples with a timer every
// RESOLUTION_MS; prom-client's own event-loop metric keeps one enabled for
// ever, which wakes an idle process 100 times a second. Here every histogram
// of the process belongs to one LoopDelay, enabled and disabled by whoever
// knows when there is work (lib/worker/stats.js, lib/primary/index.js).
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { require } from './require.js';

const client = require('prom-client');
const defaults = require('prom-client/lib/defaultMetrics.js');

export const RESOLUTION_MS = 10;

export class LoopDelay {
  constructor() {
    this.histograms = [];
    this.enabled = false;
  }

  /** A histogram sampling whenever this LoopDelay is enabled. */
  histogram() {
    const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
    if (this.enabled) histogram.enable();
    this.histograms.push(histogram);
    return histogram;
  }

  /** @param {boolean} on whether the process has work to measure */
  set(on) {
    if (on === this.enabled) return;
    this.enabled = on;
    for (const histogram of this.histograms) {
      if (on) histogram.enable();
      else histogram.disable();
    }
  }
}

/**
 * Registers prom-client's default metrics but `except` (names from its
 * metricsList), and the event-loop delay ones under prom-client's names,
 * read from a histogram of `loopDelay` that each scrape resets.
 * @param {{register?: object, prefix?: string, except?: string[]}} options
 */
export function collectDefaultMetrics(loopDelay, { register, prefix = '', except = [] } = {}) {
  for (const name of defaults.metricsList) {
    if (name !== 'eventLoopLag' && !except.includes(name)) require(`prom-client/lib/metrics/${name}.js`)(register, { prefix });
  }
  const histogram = loopDelay.histogram();
  const registers = register === undefined ? undefined : [register];
  const gauge = (suffix, help, aggregator, collect) => new client.Gauge({ name: `${prefix}nodejs_eventloop_lag${suffix}`, help, registers, aggregator, collect });
  const seconds = (ns) => ns / 1e9;
  const figures = [];
  // Registered first, so collected first: its collect sets every other
  // figure, as prom-client's does; its own is the delay of a setImmediate now.
  gauge('_seconds', 'Lag of event loop in seconds.', 'average', async function () {
    for (const [figure, value] of figures) figure.set(value());
    histogram.reset();
    const start = process.hrtime.bigint();
    await new Promise(setImmediate);
    this.set(Number(process.hrtime.bigint() - start) / 1e9);
  });
  const read = {
    _min_seconds: ['The minimum recorded event loop delay.', 'min', () => seconds(histogram.min)],
    _max_seconds: ['The maximum recorded event loop delay.', 'max', () => seconds(histogram.max)],
    _mean_seconds: ['The mean of the recorded event loop delays.', 'average', () => seconds(histogram.mean)],
    _stddev_seconds: ['The standard deviation of the recorded event loop delays.', 'average', () => seconds(histogram.stddev)],
    _p50_seconds: ['The 50th percentile of the recorded event loop delays.', 'average', () => seconds(histogram.percentile(50))],
    _p90_seconds: ['The 90th percentile of the recorded event loop delays.', 'average', () => seconds(histogram.percentile(90))],
    _p99_seconds: ['The 99th percentile of the recorded event loop delays.', 'average', () => seconds(histogram.percentile(99))]
  };
  for (const [suffix, [help, aggregator, value]] of Object.entries(read)) figures.push([gauge(suffix, help, aggregator), value]);
}
