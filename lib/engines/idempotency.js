// Idempotent publishing: a publish repeated with the same idempotencyKey on
// the same channel within the window publishes nothing and answers the first
// one's {seq, epoch}, so a backend may retry after a timeout without
// doubling a message. A key is scoped to its channel (a broadcast's key
// covers each of its channels once).
//
// The memory engine keeps the keys here; the Redis engine keeps them in
// Redis inside the publish script (./redis/publish.lua), with the same
// window and bound per channel, so two nodes cannot both accept a duplicate.

/** How long a key is remembered. */
export const IDEMPOTENCY_WINDOW_MS = 5 * 60 * 1000;

/** Keys held (per machine here; per channel under Redis): past it the oldest go first, counted. */
export const MAX_IDEMPOTENCY_KEYS = 100000;

export class IdempotencyKeys {
  constructor(max = MAX_IDEMPOTENCY_KEYS, windowMs = IDEMPOTENCY_WINDOW_MS) {
    this.max = max;
    this.windowMs = windowMs;
    // "<channel> <key>" -> the first result; a Map keeps insertion order, which is age order.
    this.keys = new Map();
    this.dropped = 0; // keys let go before their window ended, to stay within `max`
  }

  /** @returns {{seq: number, epoch: string, at: number} | undefined} the first publish with this key, if still remembered */
  get(channel, key, now) {
    this.expire(now);
    return this.keys.get(`${channel} ${key}`);
  }

  remember(channel, key, seq, epoch, now) {
    this.keys.set(`${channel} ${key}`, { seq, epoch, at: now });
    if (this.keys.size <= this.max) return;
    this.keys.delete(this.keys.keys().next().value);
    this.dropped++;
  }

  expire(now) {
    const cutoff = now - this.windowMs;
    for (const [name, first] of this.keys) {
      if (first.at >= cutoff) return;
      this.keys.delete(name);
    }
  }
}
