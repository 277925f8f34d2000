// Server-side keepalive as a timer wheel. Every connection sits in one of
// `slots` slots; one timer for the whole worker visits one slot per tick, so a
// full round of pings is spread evenly over the ping interval instead of
// stalling the event loop in one sweep. A connection that has not shown life
// (pong, or any frame) since its previous ping is terminated. An SSE stream
// cannot answer: it gets a `: ping` comment, and a stream whose peer is gone
// fails at that write and closes.
import { PING_FRAME, writeFrame } from './frames.js';
import { PING_COMMENT } from './sse-stream.js';
import { metrics } from './metrics.js';

const kSlot = Symbol('slot');
const kAlive = Symbol('alive');
const TICK_MS = 50; // finest spacing between two slot visits

export class Keepalive {
  /**
   * @param {number} interval ms between two pings of one connection
   * @param {number} maxBuffered passed on to writeFrame
   */
  constructor(interval, maxBuffered) {
    const count = Math.max(1, Math.min(1000, Math.round(interval / TICK_MS)));
    this.slots = Array.from({ length: count }, () => new Set());
    this.maxBuffered = maxBuffered;
    this.next = 0; // slot a new connection joins: round robin keeps slots even
    this.cursor = 0; // slot the next tick visits
    this.timer = setInterval(() => this.tick(), interval / count);
    this.timer.unref();
  }

  add(ws) {
    ws[kAlive] = true;
    ws[kSlot] = this.next;
    this.slots[this.next].add(ws);
    this.next = (this.next + 1) % this.slots.length;
  }

  remove(ws) {
    this.slots[ws[kSlot]]?.delete(ws);
  }

  /** Every connection held, for the drain. */
  *all() {
    for (const slot of this.slots) yield* slot;
  }

  /** The peer showed life: pong frame, protocol ping or any message. */
  static alive(ws) {
    ws[kAlive] = true;
  }

  tick() {
    const slot = this.slots[this.cursor];
    this.cursor = (this.cursor + 1) % this.slots.length;
    let pinged = 0;
    for (const ws of slot) {
      if (ws.sse === true) {
        if (writeFrame(ws, PING_COMMENT, this.maxBuffered)) pinged++;
        continue;
      }
      if (!ws[kAlive]) {
        metrics.terminated.inc();
        slot.delete(ws);
        ws.terminate();
        continue;
      }
      ws[kAlive] = false;
      if (writeFrame(ws, PING_FRAME, this.maxBuffered)) pinged++;
    }
    if (pinged > 0) metrics.pings.inc(pinged);
  }

  stop() {
    clearInterval(this.timer);
  }
}
