// A connection's life from open to close, the same for every way in (a
// native WebSocket in either encoding, an SSE stream, a Pusher WebSocket):
// it is given its session (lib/core/session.js: everything the gateway holds
// for it), counted in at the door (./admission.js), given an identity (at once
// under --auth none; once its credential or the connect hook says who it
// is otherwise), joins and leaves channels, is kept to that identity's end
// (./expiry.js) and, when it closes, taken out of everything it was in. A
// way in decodes its frames into these calls and encodes what they answer.
//
// A join is held from its first moment: the channel counts toward
// --max-subscriptions while a hook, a presence admission or the engine is
// still deciding, and a leave or a close meanwhile cancels it, so nothing
// of it is left anywhere (the subscription, the presence entry, the
// engine's route). Its owner (the way in) hears once, through
// joined(request, answer), where the join ended.
import { AuthFailed, CloseCode, ErrorCode } from '../core/errors.js';
import { ANONYMOUS, identify, identityOf } from '../core/identity.js';
import { Deadlines } from './deadlines.js';
import { Expiry } from './expiry.js';
import { Session } from '../core/session.js';
import { kSession, kTransport } from '../core/symbols.js';
import { metrics } from './metrics.js';
import { Recovery } from '../protocol/outcomes.js';

// The reason label of gateway_connections_closed_total, by close code.
const CLOSE_REASONS = new Map([
  [1000, 'normal'],
  [1001, 'going_away'],
  [1005, 'no_status'],
  [1006, 'abnormal'],
  [1008, 'policy'],
  [1009, 'too_big'],
  [1011, 'internal_error'],
  [1013, 'try_again'],
  [CloseCode.AUTH_TIMEOUT, 'auth_timeout'],
  [CloseCode.TOKEN_EXPIRED, 'token_expired'],
  [CloseCode.DISCONNECTED, 'disconnected']
]);

export class Sessions {
  /**
   * @param {object} options
   * @param {import('./admission.js').Admission} options.admission
   * @param {import('./keepalive.js').Keepalive} options.keepalive
   * @param {import('./subscriptions.js').Subscriptions} options.subscriptions
   * @param {import('../worker/relay.js').WorkerRelay} options.relay
   * @param {import('./presence.js').WorkerPresence} options.presence
   */
  constructor({ admission, keepalive, subscriptions, relay, presence }) {
    this.admission = admission;
    this.keepalive = keepalive;
    this.subscriptions = subscriptions;
    this.relay = relay;
    this.presence = presence;
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
   * A new connection's session, made once, when its way in first holds it:
   * a WebSocket's right after its upgrade, an SSE stream's before its
   * identity and channels are decided (it opens once they are).
   * @param {import('../core/seams.js').WayIn} way
   * @param {string} id the connection's id (Admission.clientId, or the way in's own)
   * @returns {Session}
   */
  begin(conn, way, id) {
    return (conn[kSession] = new (way.Session ?? Session)(way, id));
  }

  /**
   * A connection let in by the admission gate is open, counted by its way
   * in; under --auth none it is anonymous from now on, otherwise it waits
   * for an identity, and a credential it must present itself
   * (`credentialMs` > 0) has that long.
   */
  opened(conn, ip, credentialMs = 0) {
    const { way } = conn[kSession];
    way.count++;
    way.opened++;
    way.metrics.added();
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
      throw new AuthFailed(ErrorCode.FORBIDDEN, 'user_cap', `at most ${this.admission.maxConnsPerUser} connections per user`);
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

  /**
   * A subscribe to a channel the connection holds already, one rule for
   * every way in: it is not joined again. Live, it is answered again where
   * the channel stands (`local`: its seq and epoch); still joining, its one
   * answer is on its way, and each way in says so as its protocol does.
   * @returns {{live: boolean, local: object}|undefined} undefined: not held, a join to make
   */
  held(conn, channel) {
    if (!this.subscriptions.holds(conn, channel)) return undefined;
    const local = this.subscriptions.local(channel);
    return { live: local.has(conn), local };
  }

  /** @returns {import('../core/seams.js').JoinRequest|undefined} the connection's join of `channel` not live yet, as its way in made it */
  joiningOf(conn, channel) {
    return conn[kSession].joining?.get(channel);
  }

  /**
   * Joins `request.channel`: held at once, live once the wait (a hook, a
   * presence admission) said yes and the engine said where the channel
   * stands (at once when this worker already receives it and nothing needs
   * replaying). The owner's joined(request, answer) is called once, with
   * answer.live false when the join was cancelled or found stale.
   * @param {import('../core/seams.js').JoinRequest} request
   */
  join(request) {
    const { conn, channel, wait } = request;
    request.local = this.subscriptions.add(conn, channel, request.companion);
    if (wait === undefined) return this.route(request);
    request.wait = undefined;
    (conn[kSession].joining ??= new Map()).set(channel, request);
    wait.then(
      () => this.waited(request),
      (err) => this.waited(request, err)
    );
  }

  /** A join's wait ended: refused, cancelled meanwhile, or on to the engine. */
  waited(request, err) {
    if (!pending(request)) return; // left or closed while it waited: cancelled there
    if (err !== undefined || !request.conn[kTransport].isOpen(request.conn)) return this.drop(request, err);
    this.route(request);
  }

  route(request) {
    const { conn, channel, since } = request;
    // A join under a cap of members always asks: the member is admitted where the entries live.
    if (request.presence !== undefined || !this.subscriptions.upToDate(channel, since, request.latest)) {
      (conn[kSession].joining ??= new Map()).set(channel, request);
      return this.relay.subscribe(request, this);
    }
    this.live(request);
    if (since !== undefined) metrics.recoveries.inc({ result: Recovery.RECOVERED });
    const { seq, epoch } = request.local;
    request.owner.joined(request, { live: true, seq, epoch, recovered: since === undefined ? undefined : true });
  }

  /** The primary's answer to a join this worker could not answer itself (../worker/relay.js). */
  routed(request, answer) {
    const { conn, channel, local } = request;
    if (!pending(request)) return; // cancelled meanwhile: its owner was told then
    this.done(conn, channel);
    if (!conn[kTransport].isOpen(conn)) return;
    // A record made anew since the request: the owner is told where the
    // channel stands, nothing replayed.
    answer.live = answer.current && this.subscriptions.holds(conn, channel) && !local.has(conn);
    if (answer.live) {
      this.live(request);
      if (answer.result !== undefined) metrics.recoveries.inc({ result: answer.result });
    }
    request.owner.joined(request, answer);
  }

  /** The primary refused a join under a cap of members (the channel is full): its owner is told. */
  refused(request, err) {
    if (!pending(request)) return; // cancelled meanwhile: its owner was told then
    request.admitted = false; // the primary admitted no entry to take out
    this.drop(request, err);
  }

  /** A join that will not go live (refused, or its connection gone while it waited): cancelled and no longer held; a refusal is told to its owner. */
  drop(request, err) {
    const { conn, channel } = request;
    this.cancel(request);
    this.subscriptions.remove(conn, channel, request.companion);
    if (err !== undefined && conn[kTransport].isOpen(conn)) request.owner.joinRefused(request, err);
  }

  live({ conn, local, delta, presence }) {
    // A member admitted under a cap is in presence already: no join to tell.
    this.subscriptions.activate(conn, local, delta !== undefined, presence !== undefined);
  }

  /**
   * Leaves a channel held or being joined: a join not live yet is cancelled
   * (its owner is told, answer.live false), a presence entry admitted for it
   * taken out.
   * @returns {boolean} whether the connection held or was joining the channel
   */
  leave(conn, channel, companion = false) {
    const request = conn[kSession].joining?.get(channel);
    const held = this.subscriptions.holds(conn, channel);
    this.subscriptions.remove(conn, channel, companion);
    if (request === undefined) return held;
    this.cancel(request);
    request.owner.joined(request, { live: false });
    return true;
  }

  /** A join that will not go live: out of the waiting list, its admitted presence entry taken out. */
  cancel(request) {
    this.done(request.conn, request.channel);
    if (request.admitted) this.presence.left(request.conn, request.channel);
  }

  done(conn, channel) {
    const session = conn[kSession];
    session.joining.delete(channel);
    if (session.joining.size === 0) session.joining = undefined;
  }

  /** The connection closed with `code`: out of the wheels, the user index, its channels and the counts. */
  closed(conn, code) {
    const { way, joining } = conn[kSession];
    way.count--;
    way.metrics.closed(closeReason(code));
    if (joining !== undefined) for (const request of joining.values()) this.cancel(request);
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

/** Whether a join is still waiting (not left, closed or answered meanwhile). */
function pending(request) {
  return request.conn[kSession].joining?.get(request.channel) === request;
}

/** The reason label of gateway_connections_closed_total for a close code. */
export function closeReason(code) {
  return CLOSE_REASONS.get(code) ?? 'other';
}
