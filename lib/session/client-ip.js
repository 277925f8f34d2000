// Which address a connection belongs to, for logs and per-IP limits.
import { kClientIp } from '../core/symbols.js';

/**
 * The primary tags each socket it hands over with the client's IP (from the
 * PROXY header when there is one). Behind an ALB the TCP peer is the load
 * balancer, so with --trust-forwarded the right-most X-Forwarded-For entry,
 * the one the ALB itself appended, is the client; entries to its left come
 * from the client and can be forged.
 */
export function clientIp(req, trustForwarded) {
  if (trustForwarded) {
    const forwarded = req.headers['x-forwarded-for'];
    if (forwarded) {
      const last = forwarded.slice(forwarded.lastIndexOf(',') + 1).trim();
      if (last) return last;
    }
  }
  const socket = req.socket;
  return socket[kClientIp] ?? normalizeIp(socket.remoteAddress);
}

/** '::ffff:1.2.3.4' and '1.2.3.4' are the same client. */
export function normalizeIp(address = '') {
  return address.startsWith('::ffff:') ? address.slice(7) : address;
}
