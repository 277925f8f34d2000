// One channel's recent messages, kept for recovery. The history always ends
// at the channel's latest seq and has no gap, so an entry's seq follows from
// its place: the last entry is `latest`, the one before it `latest - 1`, and
// so on. Entries leave from the front: past the size cap, or once older than
// the TTL.

/**
 * Bytes an entry costs beyond its payload (the string's header, two array
 * slots and their growth room, a time): `npm run bench -- --scenarios
 * channels` measured 235 B of primary heap per 128-byte message. Counting it
 * makes the budget hold in real memory, floods of tiny messages included.
 */
export const ENTRY_OVERHEAD = 104;

export class History {
  constructor() {
    // A ring: `count` entries from `start`, oldest first; no array is
    // shifted or allocated per publish once it is full.
    this.data = []; // serialised data
    this.times = []; // when each entry was published, ms on the engine's clock
    this.start = 0;
    this.count = 0;
    this.bytes = 0;
    this.usedAt = 0; // the newest entry's time, or when the last subscriber left
  }

  /**
   * Adds the channel's latest message, dropping the oldest past `size`.
   * @returns {number} the change in bytes
   */
  append(dataJson, now, size) {
    const before = this.bytes;
    if (this.count === size) this.dropOldest(size);
    const at = (this.start + this.count) % size;
    this.data[at] = dataJson;
    this.times[at] = now;
    this.count++;
    this.bytes += dataJson.length + ENTRY_OVERHEAD;
    this.usedAt = now;
    return this.bytes - before;
  }

  /**
   * Drops the entries published before `cutoff`.
   * @returns {number} bytes freed
   */
  expire(cutoff, size) {
    const before = this.bytes;
    while (this.count > 0 && this.times[this.start] < cutoff) this.dropOldest(size);
    return before - this.bytes;
  }

  /**
   * The data of every message after `seq`, in order, or undefined when the
   * history no longer reaches back to `seq + 1`.
   * @param {number} seq the last seq the client has
   * @param {number} latest the channel's latest seq
   * @param {number} size the ring's size (--history-size)
   */
  after(seq, latest, size) {
    const missed = latest - seq;
    if (missed > this.count) return undefined;
    const out = new Array(missed);
    for (let i = 0; i < missed; i++) out[i] = this.data[(this.start + this.count - missed + i) % size];
    return out;
  }

  dropOldest(size) {
    this.bytes -= this.data[this.start].length + ENTRY_OVERHEAD;
    this.data[this.start] = undefined;
    this.start = (this.start + 1) % size;
    this.count--;
  }
}
