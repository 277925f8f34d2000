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
    this.keys = new Map(); // "<channel> <key>" -> the first result
    // The same names oldest first, in a ring: a Map iterated from its front
    // after many deletes walks over their holes, which would make dropping
    // the oldest cost more the longer the gateway runs.
    this.ring = [];
    this.head = 0;
    this.dropped = 0; // keys let go before their window ended, to stay within `max`
  }

  /** @returns {{seq: number, epoch: string, at: number} | undefined} the first publish with this key, if still remembered */
  get(channel, key, now) {
    this.expire(now);
    return this.keys.get(`${channel} ${key}`);
  }

  remember(channel, key, seq, epoch, now) {
    if (this.keys.size === this.max) {
      this.dropOldest();
      this.dropped++;
    }
    const name = `${channel} ${key}`;
    this.keys.set(name, { seq, epoch, at: now });
    this.ring[(this.head + this.keys.size - 1) % this.max] = name;
  }

  expire(now) {
    const cutoff = now - this.windowMs;
    while (this.keys.size > 0 && this.keys.get(this.ring[this.head]).at < cutoff) this.dropOldest();
  }

  dropOldest() {
    this.keys.delete(this.ring[this.head]);
    this.ring[this.head] = undefined;
    this.head = (this.head + 1) % this.max;
  }
}
