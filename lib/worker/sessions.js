// A connection's life from open to close, the same for every transport: it
// is counted in at the door (./admission.js), given an identity (at once
// under --auth none; once its credential or the connect hook says who it
// is otherwise), kept to that identity's end (./expiry.js) and, when it
// closes, taken out of everything it was in. A WebSocket (./connections.js)
// and an SSE stream (./sse.js) only say when these happen.
import { AuthFailed, CloseCode, ErrorCode } from '../errors.js';
import { ANONYMOUS, identify, identityOf } from '../core/identity.js';
import { Deadlines } from './deadlines.js';
import { Expiry } from './expiry.js';
import { kTransport } from '../core/symbols.js';
import { metrics } from './metrics.js';

export class Sessions {
  /**
   * @param {object} options
   * @param {import('./admission.js').Admission} options.admission
   * @param {import('./keepalive.js').Keepalive} options.keepalive
   * @param {import('./subscriptions.js').Subscriptions} options.subscriptions
   */
  constructor({ admission, keepalive, subscriptions }) {
    this.admission = admission;
    this.keepalive = keepalive;
    this.subscriptions = subscriptions;
    this.users = admission.users;
    // One wheel for every transport, where identities end: before an
    // identity, a connection's deadline is its credential's
    // (--auth-timeout); after, its identity's end.
    if (admission.identified) {
      this.deadlines = new Deadlines((conn) => this.deadlinePassed(conn));
      this.expiry = new Expiry(this.deadlines, admission.hooks);
    }
  }

  /**
   * A connection let in by the admission gate is open; under --auth none it
   * is anonymous from now on, otherwise it waits for an identity, and a
   * credential it must present itself (`credentialMs` > 0) has that long.
   */
  opened(conn, ip, credentialMs = 0) {
    this.admission.admitted(conn, ip);
    this.keepalive.add(conn);
    if (!this.admission.identified) identify(conn, ANONYMOUS);
    else if (credentialMs > 0) this.deadlines.set(conn, Date.now() + credentialMs);
  }

  /**
   * Admits an identity (a credential's, the connect hook's) once the cluster
   * has counted its user.
   * @returns {Promise<void>} rejects with AuthFailed past --max-conns-per-user
   */
  async admit(conn, identity) {
    const { user } = identity;
    if (!(await this.users.admit(user))) {
      throw new AuthFailed(ErrorCode.FORBIDDEN, 'user_cap', `at most ${this.admission.config.maxConnsPerUser} connections per user`);
    }
    if (!conn[kTransport].isOpen(conn)) return void this.users.remove(conn, user); // closed while the primary counted
    this.users.add(conn, user);
    identify(conn, identity);
    this.expiry.set(conn, identity.expiresAt);
  }

  /** A fresh credential for the same user: its grants apply to new commands, its end to the connection. */
  refreshed(conn, identity) {
    identify(conn, identity);
    this.expiry.set(conn, identity.expiresAt);
  }

  /** The connection closed: out of the wheels, the user index, its channels and the counts. */
  closed(conn) {
    this.keepalive.remove(conn);
    this.deadlines?.remove(conn);
    const identity = identityOf(conn);
    if (identity !== undefined && identity.user !== null) this.users.remove(conn, identity.user);
    this.subscriptions.removeAll(conn);
    this.admission.left(conn);
  }

  /** The credential's time ran out before any came, or the identity's end (or its refresh) is due. */
  deadlinePassed(conn) {
    if (identityOf(conn) !== undefined) return this.expiry.passed(conn);
    metrics.disconnects.inc({ reason: 'auth_timeout' });
    conn[kTransport].close(conn, CloseCode.AUTH_TIMEOUT, 'no valid token in time');
  }
}
