// When an identified connection's identity ends: at its token's `exp`, or the
// connect hook's `expireAt`. Under --refresh-hook the backend is asked ahead
// of time whether it goes on; each connection asks at its own random moment
// in the last part of its life, so connections given the same expireAt (a
// storm admitted in one second, an application that ends sessions on the
// hour) do not come back to the backend all at once. Deadlines sit in the
// transport's timer wheel (./deadlines.js).
import { CloseCode, HookFailed } from '../core/errors.js';
import { kSession, kTransport } from '../core/symbols.js';
import { userOf } from '../core/identity.js';
import { metrics } from './metrics.js';

const MAX_LEAD_MS = 60000; // a refresh is asked at most this long before the end
const MIN_RETRY_MS = 1000; // a failed refresh is retried while at least this much is left

export class Expiry {
  /**
   * @param {import('./deadlines.js').Deadlines} deadlines the transport's wheel
   * @param {import('./hooks.js').Hooks|undefined} hooks with a refresh URL: refresh ahead of the end
   */
  constructor(deadlines, hooks) {
    this.deadlines = deadlines;
    this.hooks = hooks?.refreshes ? hooks : undefined;
  }

  /** The connection's identity ends at `expiresAt` (ms; undefined: never). */
  set(conn, expiresAt) {
    if (expiresAt === undefined) return this.deadlines.remove(conn);
    if (this.hooks === undefined) return this.deadlines.set(conn, expiresAt);
    conn[kSession].expiresAt = expiresAt;
    const spread = Math.min(MAX_LEAD_MS, (expiresAt - Date.now()) / 2);
    this.deadlines.set(conn, expiresAt - spread * (0.5 + 0.5 * Math.random()));
  }

  /** Its deadline passed: the end (closed with 4003), or the moment to ask the refresh hook. */
  passed(conn) {
    const expiresAt = conn[kSession].expiresAt;
    if (expiresAt === undefined || Date.now() >= expiresAt) return expire(conn);
    const transport = conn[kTransport];
    this.hooks.refresh({ client: conn[kSession].id, user: userOf(conn) }, () => transport.isOpen(conn)).then(
      (outcome) => {
        if (!transport.isOpen(conn)) return;
        if (outcome.expired) return expire(conn);
        this.set(conn, outcome.expiresAt);
      },
      (err) => {
        if (!transport.isOpen(conn)) return;
        if (!(err instanceof HookFailed)) return expire(conn); // refused
        // The backend could not say: asked again later while there is time, else the end stands.
        const left = expiresAt - Date.now();
        this.deadlines.set(conn, left > MIN_RETRY_MS ? Date.now() + left * (0.25 + 0.25 * Math.random()) : expiresAt);
      }
    );
  }
}

function expire(conn) {
  metrics.disconnects.inc({ reason: 'token_expired' });
  conn[kTransport].close(conn, CloseCode.TOKEN_EXPIRED, 'token expired');
}
