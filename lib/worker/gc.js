// Periodic manual full GC. Workers start with --expose-gc (the primary sets
// their V8 flags). Worker i of N starts i/N of an interval late, so at most one
// worker of the machine is collecting at a time. Each pause is measured and
// exported; whether the whole idea pays off is for the benchmark to show
// (--gc-interval 0 turns it off). A worker with nothing to do (./stats.js)
// collects once more, for what its last connections left, and then not
// until it wakes.
import { performance } from 'node:perf_hooks';
import { Ticker } from '../runtime/ticker.js';
import { metrics } from '../session/metrics.js';

export class PeriodicGc {
  /**
   * @param {number} interval ms between collections (0 = never)
   * @param {number} index this worker's 0-based position among `count`
   */
  constructor(interval, index, count) {
    this.lastPauseMs = 0;
    this.maxPauseMs = 0;
    this.on = interval > 0 && typeof globalThis.gc === 'function';
    this.offset = Math.round((interval * (index % count)) / count) || interval;
    this.sleeping = true;
    this.ticker = new Ticker('gc', interval, () => {
      this.collect();
      return !this.sleeping;
    });
  }

  /** The worker has work: collections start (again), its stagger first. */
  wake() {
    const asleep = this.sleeping;
    this.sleeping = false;
    if (!this.on || !asleep || this.ticker.running || this.delay !== undefined) return;
    this.delay = setTimeout(() => {
      this.delay = undefined;
      this.collect();
      if (!this.sleeping) this.ticker.start();
    }, this.offset);
    this.delay.unref();
  }

  /** The worker has nothing to do: the next collection is the last. */
  sleep() {
    this.sleeping = true;
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
    this.sleeping = true;
    clearTimeout(this.delay);
    this.delay = undefined;
    this.ticker.stop();
  }
}
