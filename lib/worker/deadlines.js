// Auth deadlines as a hashed timer wheel: one timer per worker, however many
// connections. A connection has one deadline at a time: --auth-timeout after
// it opened until it authenticates, then its token's `exp`, moved by each
// refresh. It sits in the slot of its deadline's time modulo the wheel, so a
// tick only looks at one slot; a deadline further than one turn away is seen
// once a turn and left in place until its time comes.
const kAt = Symbol('deadline');
const SLOT_MS = 250; // a deadline is acted on within about two slots of passing
const SLOTS = 240; // one turn: a minute

export class Deadlines {
  /** @param {(ws) => void} expired called once for a connection whose deadline passed */
  constructor(expired) {
    this.expired = expired;
    this.slots = Array.from({ length: SLOTS }, () => new Set());
    this.done = Math.floor(Date.now() / SLOT_MS) - 1; // slots up to this one have been visited
    this.timer = setInterval(() => this.tick(), SLOT_MS);
    this.timer.unref();
  }

  /** Sets (or moves) the deadline of `ws` to `at` (ms since the epoch). */
  set(ws, at) {
    this.remove(ws);
    ws[kAt] = at;
    this.slots[slotOf(at)].add(ws);
  }

  remove(ws) {
    if (ws[kAt] === undefined) return;
    this.slots[slotOf(ws[kAt])].delete(ws);
    ws[kAt] = undefined;
  }

  tick() {
    const now = Date.now();
    const current = Math.floor(now / SLOT_MS);
    // A slot is visited once it is over; a stalled loop catches up, at most one turn.
    for (let n = Math.max(this.done + 1, current - SLOTS); n < current; n++) {
      const slot = this.slots[n % SLOTS];
      for (const ws of slot) {
        if (ws[kAt] > now) continue;
        slot.delete(ws);
        ws[kAt] = undefined;
        this.expired(ws);
      }
    }
    this.done = current - 1;
  }

  stop() {
    clearInterval(this.timer);
  }
}

function slotOf(at) {
  return Math.floor(at / SLOT_MS) % SLOTS;
}
