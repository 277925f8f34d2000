// Periodic manual full GC. Workers start with --expose-gc (the primary sets
// their V8 flags). Worker i of N starts i/N of an interval late, so at most one
// worker of the machine is collecting at a time. Each pause is measured and
// exported; whether the whole idea pays off is for the benchmark to show
// (--gc-interval 0 turns it off).
import { performance } from 'node:perf_hooks';
import { metrics } from './metrics.js';

export class PeriodicGc {
  /**
   * @param {number} interval ms between collections (0 = never)
   * @param {number} index this worker's 0-based position among `count`
   */
  constructor(interval, index, count) {
    this.lastPauseMs = 0;
    this.maxPauseMs = 0;
    if (interval === 0 || typeof globalThis.gc !== 'function') return;
    const offset = Math.round((interval * (index % count)) / count);
    this.timer = setTimeout(() => {
      this.timer = setInterval(() => this.collect(), interval);
      this.timer.unref();
      this.collect();
    }, offset || interval);
    this.timer.unref();
  }

  collect() {
    const start = performance.now();
    globalThis.gc();
    const pauseMs = performance.now() - start;
    this.lastPauseMs = pauseMs;
    this.maxPauseMs = Math.max(this.maxPauseMs, pauseMs);
    metrics.gcRuns.inc();
    metrics.gcPause.observe(pauseMs / 1000);
  }

  stop() {
    clearTimeout(this.timer);
    clearInterval(this.timer);
  }
}
