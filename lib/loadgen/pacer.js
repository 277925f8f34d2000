// Paces work at a steady rate: tokens accrue at `rate` per second up to
// `burst`, and each unit of work takes one. The default burst, one second's
// worth, lets a process whose event loop stalled (busy reading messages) catch
// up, so --publish-rate 200 for 8 s publishes 1,600; tokens beyond it are lost,
// so a long stall is never followed by a flood.
import { performance } from 'node:perf_hooks';

export class Pacer {
  constructor(rate, burst = Math.max(1, rate)) {
    this.rate = rate;
    this.burst = burst;
    this.tokens = Math.min(1, burst);
    this.last = performance.now();
  }

  /** Whole tokens available now, at most `wanted`; they are taken. */
  take(wanted) {
    const now = performance.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.rate);
    this.last = now;
    const n = Math.min(wanted, Math.floor(this.tokens));
    this.tokens -= n;
    return n;
  }
}
