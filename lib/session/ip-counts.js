// Open connections per client IP, both transports together, kept only under
// --max-conns-per-ip and --balance ip (one IP, one worker: this worker's count
// is the whole count; otherwise the primary counts, lib/primary/ip-counts.js).
import { kCountedIp } from '../core/symbols.js';

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

  add(connection, ip) {
    if (this.cap === 0) return;
    connection[kCountedIp] = ip;
    this.counts.set(ip, (this.counts.get(ip) ?? 0) + 1);
  }

  remove(connection) {
    if (this.cap === 0) return;
    const ip = connection[kCountedIp];
    const left = this.counts.get(ip) - 1;
    if (left > 0) this.counts.set(ip, left);
    else this.counts.delete(ip);
  }
}
