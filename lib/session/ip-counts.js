// Open connections per client IP, both transports together, kept only under
// --max-conns-per-ip and --balance ip (one IP, one worker: this worker's count
// is the whole count; otherwise the primary counts, lib/primary/ip-counts.js).
export class IpCounts {
  /** @param {number} cap --max-conns-per-ip (0 = no cap: nothing is counted) */
  constructor(cap) {
    this.cap = cap;
    this.counts = new Map(); // client IP -> open connections
  }

  /** Whether one more connection from `ip` stays within the cap. */
  allows(ip) {
    return this.cap === 0 || (this.counts.get(ip) ?? 0) < this.cap;
  }

  /** @returns {boolean} whether `ip` is counted (false: no cap, nothing is counted) */
  add(ip) {
    if (this.cap === 0) return false;
    this.counts.set(ip, (this.counts.get(ip) ?? 0) + 1);
    return true;
  }

  /** A connection add() counted under `ip` closed. */
  remove(ip) {
    const left = this.counts.get(ip) - 1;
    if (left > 0) this.counts.set(ip, left);
    else this.counts.delete(ip);
  }
}
