// --max-conns-per-ip when one client IP's connections land on several
// workers (--balance reuseport, or even): this process holds every IP's
// count and answers each admission in turn, so the cap is exact across
// workers. A worker asks in its IPC batch (one message a loop turn however
// many connections arrived) and holds the connection until the answer; it
// releases the count when the connection closes, and a dead worker's counts
// go with it. (Under --balance ip one IP always reaches one worker, which
// counts by itself: lib/session/ip-counts.js.)
import { Op } from '../core/ipc.js';

/**
 * @param {import('./relay.js').PrimaryRelay} relay
 * @param {number} cap --max-conns-per-ip
 */
export function attachIpCounts(relay, cap) {
  const counts = new Map(); // client IP -> open connections, every worker
  const release = (link, ip, n) => {
    const left = counts.get(ip) - n;
    if (left > 0) counts.set(ip, left);
    else counts.delete(ip);
    const mine = link.ips.get(ip) - n;
    if (mine > 0) link.ips.set(ip, mine);
    else link.ips.delete(ip);
  };
  relay.handle(Op.IP_ADD, (link, [, token, ip]) => {
    const held = counts.get(ip) ?? 0;
    const allowed = held < cap;
    if (allowed) {
      counts.set(ip, held + 1);
      link.ips ??= new Map(); // client IP -> its connections on this worker
      link.ips.set(ip, (link.ips.get(ip) ?? 0) + 1);
    }
    link.answer(token, allowed);
  });
  relay.handle(Op.IP_DEL, (link, [, ip]) => {
    if (link.ips?.has(ip)) release(link, ip, 1);
  });
  relay.onDetach((link) => {
    for (const [ip, n] of link.ips ?? []) release(link, ip, n);
  });
}
