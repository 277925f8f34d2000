// Auth deadlines as a hashed timer wheel: one timer per worker, however many
// connections. A connection has one deadline at a time: --auth-timeout after
// it opened until it authenticates, then its token's `exp`, moved by each
// refresh. It sits in the slot of its deadline's time modulo the wheel, so a
// tick only looks at one slot; a deadline further than one turn away is seen
// once a turn and left in place until its time comes.
//
// A deadline is kept in the connection's session (its `deadlineSlot`) as the
// number of the slot it falls in, counted from the wheel's start: a small integer V8 stores in the connection's field itself,
// where milliseconds since 1970 would be a separate 16-byte number.
//
// The timer runs only while a deadline is set.
import { kSession } from '../core/symbols.js';
import { Ticker } from '../runtime/ticker.js';

const SLOT_MS = 250; // a deadline is acted on within about two slots of passing
const SLOTS = 240; // one turn: a minute

export class Deadlines {
  /** @param {(ws) => void} expired called once for a connection whose deadline passed */
  constructor(expired) {
    this.expired = expired;
    this.slots = Array.from({ length: SLOTS }, () => new Set());
    this.start = Date.now();
    this.done = -1; // slots up to this one have been visited
    this.size = 0; // deadlines set
    this.ticker = new Ticker('deadlines', SLOT_MS, () => this.tick());
  }

  /** Sets (or moves) the deadline of `ws` to `at` (ms since the epoch). */
  set(ws, at) {
    this.remove(ws);
    // A deadline already past goes in the next slot to visit, not a turn later.
    const n = Math.max(this.done + 1, Math.floor((at - this.start) / SLOT_MS));
    ws[kSession].deadlineSlot = n;
    this.slots[n % SLOTS].add(ws);
    this.size++;
    this.ticker.start();
  }

  remove(ws) {
    const session = ws[kSession];
    const n = session.deadlineSlot;
    if (n === -1) return;
    this.slots[n % SLOTS].delete(ws);
    session.deadlineSlot = -1;
    this.size--;
  }

  /** @returns {boolean} whether a deadline is still set */
  tick() {
    const current = Math.floor((Date.now() - this.start) / SLOT_MS);
    // A slot is visited once it is over; a stalled loop catches up, at most one turn.
    for (let n = Math.max(this.done + 1, current - SLOTS); n < current; n++) {
      const slot = this.slots[n % SLOTS];
      for (const ws of slot) {
        const session = ws[kSession];
        if (session.deadlineSlot > n) continue; // a later turn's
        slot.delete(ws);
        session.deadlineSlot = -1;
        this.size--;
        this.expired(ws);
      }
    }
    this.done = current - 1;
    return this.size > 0;
  }

  stop() {
    this.ticker.stop();
  }
}

