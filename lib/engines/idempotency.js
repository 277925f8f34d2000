// Idempotent publishing: a publish repeated with the same idempotencyKey on
// the same channel within the window publishes nothing and answers the first
// one's {seq, epoch}, so a backend may retry after a timeout without
// doubling a message. A key is scoped to its channel (a broadcast's key
// covers each of its channels once).
//
// The memory engine keeps the keys here; the Redis engine keeps them in
// Redis inside the publish script (./redis/publish.lua), with the same
// window and bound per channel, so two nodes cannot both accept a duplicate.

/** How long a key is remembered, unless its channel's namespace says (idempotencyWindowMs). */
export const IDEMPOTENCY_WINDOW_MS = 5 * 60 * 1000;

/** How long a key on a channel of namespace `ns` is remembered. */
export function windowOf(ns) {
  return ns.idempotencyWindowMs ?? IDEMPOTENCY_WINDOW_MS;
}

/** Keys held (per machine and window here; per channel under Redis): past it the oldest go first, counted. */
export const MAX_IDEMPOTENCY_KEYS = 100000;

const FIRST_CAPACITY = 1024;
const EMPTY = 0; // in the index: no slot (slots are stored plus one)

/**
 * The keys seen, oldest first, in a ring of slots whose fields are columns
 * of typed arrays, found through an open-addressing index (linear probing)
 * of 32-bit hashes of channel and key. A publish's channel and key strings
 * are kept as they came (compared only when their hash matches, so a
 * collision is never taken for a duplicate); besides them a key costs about
 * 60 bytes of columns and index, and a check or a new key allocates
 * nothing: a gateway that holds a hundred thousand keys gives the collector
 * no object per key to trace, and a lookup reads a few integers. The ring
 * finds the oldest at once (a Map iterated from its front after many
 * deletes walks over their holes).
 */
export class IdempotencyKeys {
  constructor(max = MAX_IDEMPOTENCY_KEYS, windowMs = IDEMPOTENCY_WINDOW_MS) {
    this.max = max;
    this.windowMs = windowMs;
    this.count = 0;
    this.head = 0; // the oldest key's slot
    this.dropped = 0; // keys let go before their window ended, to stay within `max`
    this.layOut(Math.min(FIRST_CAPACITY, max));
  }

  /** Keys held now. */
  get size() {
    return this.count;
  }

  /**
   * @returns {number} the slot of the first publish with this key on this
   *   channel while it is remembered (seqAt and epochAt read it), or -1
   */
  find(channel, key, now) {
    this.expire(now);
    const hash = hashOf(channel, key);
    const { index, hashes, mask } = this;
    for (let i = hash & mask; index[i] !== EMPTY; i = (i + 1) & mask) {
      if (hashes[i] !== hash) continue;
      const slot = index[i] - 1;
      if (this.keys[slot] === key && this.channels[slot] === channel) return slot;
    }
    return -1;
  }

  seqAt(slot) {
    return this.seqs[slot];
  }

  /** The epoch (the memory engine's integer) of the publish in `slot`. */
  epochAt(slot) {
    return this.epochs[slot];
  }

  /** A key not held (find answered -1). */
  remember(channel, key, seq, epoch, now) {
    if (this.count === this.capacity) {
      if (this.capacity < this.max) this.layOut(Math.min(this.capacity * 2, this.max));
      else {
        this.dropOldest();
        this.dropped++;
      }
    }
    const slot = (this.head + this.count) % this.capacity;
    this.count++;
    this.channels[slot] = channel;
    this.keys[slot] = key;
    this.seqs[slot] = seq;
    this.epochs[slot] = epoch;
    this.times[slot] = now;
    this.insert(hashOf(channel, key), slot);
  }

  expire(now) {
    const cutoff = now - this.windowMs;
    while (this.count > 0 && this.times[this.head] < cutoff) this.dropOldest();
  }

  dropOldest() {
    const slot = this.head;
    this.unindex(hashOf(this.channels[slot], this.keys[slot]), slot);
    this.channels[slot] = undefined;
    this.keys[slot] = undefined;
    this.head = (this.head + 1) % this.capacity;
    this.count--;
  }

  insert(hash, slot) {
    const { index, mask } = this;
    let i = hash & mask;
    while (index[i] !== EMPTY) i = (i + 1) & mask;
    index[i] = slot + 1;
    this.hashes[i] = hash;
  }

  /** Takes `slot` out of the index, moving back the entries probed past it (no tombstones). */
  unindex(hash, slot) {
    const { index, hashes, mask } = this;
    let hole = hash & mask;
    while (index[hole] !== slot + 1) hole = (hole + 1) & mask;
    for (let i = (hole + 1) & mask; index[i] !== EMPTY; i = (i + 1) & mask) {
      const home = hashes[i] & mask;
      // An entry stays unless its home is cyclically outside (hole, i]: then the hole breaks its probe, and it moves there.
      if (hole <= i ? home > hole && home <= i : home > hole || home <= i) continue;
      index[hole] = index[i];
      hashes[hole] = hashes[i];
      hole = i;
    }
    index[hole] = EMPTY;
  }

  /** Columns for `capacity` keys, the ring laid out again from slot 0 and indexed anew. */
  layOut(capacity) {
    const old = this;
    const columns = {
      capacity,
      channels: new Array(capacity),
      keys: new Array(capacity),
      seqs: new Float64Array(capacity),
      epochs: new Int32Array(capacity),
      times: new Float64Array(capacity),
      // At most half full, so a probe is short.
      index: new Int32Array(2 ** Math.ceil(Math.log2(capacity * 2))),
      hashes: new Int32Array(2 ** Math.ceil(Math.log2(capacity * 2)))
    };
    columns.mask = columns.index.length - 1;
    const held = [];
    for (let n = 0; n < this.count; n++) held.push((old.head + n) % old.capacity);
    const from = { channels: old.channels, keys: old.keys, seqs: old.seqs, epochs: old.epochs, times: old.times };
    Object.assign(this, columns, { head: 0 });
    held.forEach((slot, n) => {
      for (const name of ['channels', 'keys', 'seqs', 'epochs', 'times']) this[name][n] = from[name][slot];
      this.insert(hashOf(this.channels[n], this.keys[n]), n);
    });
  }
}

/** 32-bit FNV-1a over the channel, a separator and the key. */
function hashOf(channel, key) {
  let hash = 0x811c9dc5;
  for (let i = 0; i < channel.length; i++) hash = Math.imul(hash ^ channel.charCodeAt(i), 0x01000193);
  hash = Math.imul(hash ^ 0x20, 0x01000193);
  for (let i = 0; i < key.length; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193);
  return hash;
}
