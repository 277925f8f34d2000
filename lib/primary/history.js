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
    this.data = []; // serialised data, oldest first
    this.times = []; // when each entry was published, ms on the engine's clock
    this.bytes = 0;
    this.usedAt = 0; // the newest entry's time, or when the last subscriber left
  }

  /**
   * Adds the channel's latest message, dropping the oldest past `size`.
   * @returns {number} the change in bytes
   */
  append(dataJson, now, size) {
    const before = this.bytes;
    this.data.push(dataJson);
    this.times.push(now);
    this.usedAt = now;
    this.bytes += dataJson.length + ENTRY_OVERHEAD;
    if (this.data.length > size) this.dropFront(this.data.length - size);
    return this.bytes - before;
  }

  /**
   * Drops the entries published before `cutoff`.
   * @returns {number} bytes freed
   */
  expire(cutoff) {
    const times = this.times;
    let stale = 0;
    while (stale < times.length && times[stale] < cutoff) stale++;
    const before = this.bytes;
    if (stale > 0) this.dropFront(stale);
    return before - this.bytes;
  }

  /**
   * The data of every message after `seq`, in order, or undefined when the
   * history no longer reaches back to `seq + 1`.
   * @param {number} seq the last seq the client has
   * @param {number} latest the channel's latest seq
   */
  after(seq, latest) {
    const missed = latest - seq;
    if (missed > this.data.length) return undefined;
    return this.data.slice(this.data.length - missed);
  }

  dropFront(count) {
    for (let i = 0; i < count; i++) this.bytes -= this.data[i].length + ENTRY_OVERHEAD;
    this.data.splice(0, count);
    this.times.splice(0, count);
  }
}
