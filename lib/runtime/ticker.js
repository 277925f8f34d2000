// A periodic timer that runs only while there is work for it. start() when
// work arrives (nothing happens while it runs already); the timer stops
// itself after a tick that says nothing is left (returns false). An idle
// process thus wakes for nothing. Every tick is counted by the timer's name,
// so that can be seen from outside (gateway_timer_ticks_total).
export const ticks = new Map(); // timer name -> ticks since the process started

export class Ticker {
  /**
   * @param {string} name for the tick count
   * @param {number} intervalMs
   * @param {() => boolean} tick the periodic work; false when nothing is left to do
   */
  constructor(name, intervalMs, tick) {
    this.name = name;
    this.intervalMs = intervalMs;
    this.tick = tick;
    this.timer = undefined;
    this.run = this.run.bind(this);
    if (!ticks.has(name)) ticks.set(name, 0);
  }

  get running() {
    return this.timer !== undefined;
  }

  start() {
    if (this.timer !== undefined) return;
    this.timer = setInterval(this.run, this.intervalMs);
    this.timer.unref();
  }

  /** Changes the time between ticks; a running timer's next tick comes one new interval from now. */
  every(intervalMs) {
    if (intervalMs === this.intervalMs) return;
    this.intervalMs = intervalMs;
    if (this.timer === undefined) return;
    this.stop();
    this.start();
  }

  run() {
    ticks.set(this.name, ticks.get(this.name) + 1);
    if (this.tick() === false) this.stop();
  }

  stop() {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}
