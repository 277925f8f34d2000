// The command core: what a client may do to a channel, decided once for
// every way in. A WebSocket frame, an SSE request's channels and (through
// ./server.js) the server API, POST /publish and the subscriptions a
// credential names all come here; a way in only decodes into these calls
// and encodes what they answer.
//
// A client's command is checked in one order, everywhere:
//   1. its shape (the decoder's: bad_request);
//   2. the channel's name, then its namespace when namespaces are
//      configured (invalid_channel);
//   3. the connection has an identity (unauthorized): a credential's, the
//      connect hook's, or under --auth none the anonymous one, whose grants
//      are open, so no rule asks which auth mode is on;
//   4. its grant for the channel (forbidden): the identity's subscribe or
//      publish patterns; for a presence read, a subscription to the channel;
//   5. what the namespace allows (clientPublish: forbidden; presence and
//      delta: bad_request, as a request for what the channel lacks);
//   6. the connection's rate (rate_limited): a publish, a presence read, and
//      a subscribe that costs more than a table entry (a hook call, a
//      recovery) spend a token;
//   7. whether the engine can take it (rate_limited while the relay is busy,
//      unavailable while the engine is unreachable);
//   8. the namespace's hook, asked last since it costs the backend a request.
// The server (./server.js) is trusted: it skips 3, 4, 6 and 8, never 2.
//
// Checks throw the GatewayError that answers them (../errors.js); an
// operation that waits for a hook returns a promise that rejects with it.
import { engineUnavailable, ErrorCode, GatewayError } from './errors.js';
import { checkChannel } from '../protocol/validate.js';
import { jsonable, serialiseData } from '../codecs/data.js';
import { allows } from './permissions.js';
import { identityOf } from './identity.js';
import { kSession, kTransport } from './symbols.js';
import { TokenBucket } from './token-bucket.js';

const BUSY = 'the gateway is busy relaying: retry shortly';

export class Commands {
  /**
   * @param {object} options
   * @param {number} options.rate tokens per second of step 6: --max-publish-rate, or another protocol's rate
   * @param {number} options.maxSubscriptions per connection (--max-subscriptions)
   * @param {{authFailures: {inc: (labels: object) => void}, apiRequests: {inc: (labels: object) => void}}} options.metrics
   *   the counters the core keeps (lib/session/metrics.js's, handed in by the wiring)
   * @param {import('./namespaces.js').Namespaces} options.namespaces the process's one
   * @param {import('./seams.js').Relay} options.relay
   * @param {import('./seams.js').Subscriptions} options.subscriptions
   * @param {import('./seams.js').Presence} options.presence
   * @param {import('./seams.js').Hooks} [options.hooks] with a subscribe or publish hook
   * @param {(channel: string, id?: string|number) => void} [options.checkName] the
   *   channel name rule of the ways in this core serves (step 2): the native
   *   one, or another protocol's for its channels
   * @param {(channel: string) => string} [options.showName] a channel as its
   *   client spelled it, for the text of refusals (another protocol's
   *   channels have names of their own inside the gateway)
   * @param {(conn: object) => number} [options.rateOf] a connection's own rate (step 6), where its
   *   protocol sets one per connection (a Pusher app's); else `rate`
   */
  constructor({ rate, maxSubscriptions, metrics, namespaces, relay, subscriptions, presence, hooks, checkName = checkChannel, showName = same, rateOf }) {
    this.metrics = metrics;
    this.namespaces = namespaces;
    this.checkName = checkName;
    this.showName = showName;
    this.relay = relay;
    this.subscriptions = subscriptions;
    this.presenceStore = presence;
    this.hooks = hooks;
    this.rate = rate;
    this.rateOf = rateOf;
    this.maxSubscriptions = maxSubscriptions;
  }

  // ---- The checks, in their order ----

  /** 2: the channel's namespace, once its name is valid. */
  namespace(channel, id) {
    this.checkName(channel, id);
    const ns = this.namespaces.lookup(channel);
    if (ns === undefined) throw new GatewayError(ErrorCode.INVALID_CHANNEL, `unknown namespace in ${this.showName(channel)}`, id);
    return ns;
  }

  /** 3: the connection's identity. */
  identity(conn, id) {
    const identity = identityOf(conn);
    if (identity !== undefined) return identity;
    this.metrics.authFailures.inc({ reason: 'missing' });
    throw new GatewayError(ErrorCode.UNAUTHORIZED, 'no identity yet: authenticate first (an auth frame, or wait for the welcome)', id);
  }

  /** 4: the identity's `grant` ('subscribe' or 'publish') allows the channel. */
  granted(identity, grant, channel, id) {
    if (allows(identity.permissions[grant], channel, identity.user)) return;
    throw this.forbidden(`the identity does not allow ${grant} on ${this.showName(channel)}`, id);
  }

  /** 6: one of the connection's tokens, --max-publish-rate (or its own rate) per second in bursts of as many. */
  spend(conn, what, id) {
    const rate = this.rateOf === undefined ? this.rate : this.rateOf(conn);
    const session = conn[kSession];
    if (!(session.commandTokens ??= new TokenBucket(rate)).take(rate)) throw new GatewayError(ErrorCode.RATE_LIMITED, `over ${rate} ${what} per second`, id);
  }

  /** 7: the engine can take a publish now. */
  engineTakes(id) {
    if (this.relay.busy) throw new GatewayError(ErrorCode.RATE_LIMITED, BUSY, id);
    if (this.relay.unavailable) throw engineUnavailable(id);
  }

  /** 4 and 5: a refusal, counted. */
  forbidden(message, id) {
    this.metrics.authFailures.inc({ reason: 'forbidden' });
    return new GatewayError(ErrorCode.FORBIDDEN, message, id);
  }

  // ---- A client's operations ----

  /**
   * A subscribe, checked; the transport then joins the channel (it knows
   * how its connection is answered). A subscribe to a channel the
   * connection already holds is the transport's to answer, unchecked again.
   * @param {{seq: number, epoch: string}} [since] where a recovery starts
   * @param {string} [delta] the delta algorithm asked for (the decoder checked its name)
   * @returns {Namespace|Promise<Namespace>} the channel's namespace, at once
   *   or once its subscribe hook allowed it
   */
  subscribe(conn, channel, since, id, delta) {
    const ns = this.namespace(channel, id);
    const identity = this.identity(conn, id);
    this.granted(identity, 'subscribe', channel, id);
    if (delta !== undefined) deltaAllowed(ns, this.showName(channel), id);
    if (this.subscriptions.count(conn) >= this.maxSubscriptions) {
      throw new GatewayError(ErrorCode.TOO_MANY_SUBSCRIPTIONS, `at most ${this.maxSubscriptions} subscriptions per connection`, id);
    }
    // A hook call costs the backend, a recovery the engine a look-up and a replay.
    const recovering = since !== undefined && !this.subscriptions.upToDate(channel, since, ns.latest);
    if (ns.subscribeHook || recovering) this.spend(conn, 'hooked or recovering subscribes and publishes', id);
    if (!ns.subscribeHook) return ns;
    return this.hooks.subscribe({ client: conn[kSession].id, user: identity.user, channel }, present(conn)).then(() => ns, withId(id));
  }

  /** An unsubscribe, checked: the name (nothing else: leaving is always allowed); the session then leaves. */
  unsubscribe(conn, channel, id) {
    this.namespace(channel, id);
    this.identity(conn, id);
  }

  /**
   * A client's publish, checked and handed to the relay. The checks
   * allocate nothing and the data is serialised once, after them: this is
   * the path every WebSocket publish takes. The way in answers it (the
   * native protocol acknowledges with the seq; Pusher's client events are
   * not answered); a refusal after the checks carries `id`.
   * @param {string} [exclude] a client not to deliver it to (Pusher: the sender of a client event)
   * @param {string} [idempotencyKey] the engine publishes a key once in its window, and answers a
   *   repeat with the first's seq (Ably: a message a client sends again after resuming its connection)
   * @returns {Promise<import('./seams.js').PublishResult | undefined>} once the engine
   *   stored it; undefined when the connection closed while the publish hook decided (nothing published)
   */
  publish(conn, channel, data, id, exclude, idempotencyKey) {
    const ns = this.namespace(channel, id);
    const identity = this.identity(conn, id);
    this.granted(identity, 'publish', channel, id);
    if (!ns.clientPublish) throw this.forbidden(`only the server publishes in namespace ${ns.name}`, id);
    this.spend(conn, 'publishes', id);
    this.engineTakes(id);
    if (!ns.publishHook) return this.relay.publish({ channel, data: serialiseData(data), exclude, idempotencyKey }).catch(withId(id));
    const body = { client: conn[kSession].id, user: identity.user, channel, data: jsonable(data) };
    return this.hooks
      .publish(body, present(conn))
      .then((outcome) => (conn[kTransport].isOpen(conn) ? this.relay.publish({ channel, data: outcome.dataJson ?? serialiseData(data), exclude, idempotencyKey }) : undefined))
      .catch(withId(id));
  }

  /**
   * A presence or presence_stats read: of a channel the connection is
   * subscribed to (its grant and the subscribe hook have said yes already).
   * @returns {Promise<object>} the engine's answer (../session/presence.js)
   */
  presence(conn, channel, stats, id) {
    const ns = this.namespace(channel, id);
    this.identity(conn, id);
    if (!this.subscriptions.holds(conn, channel)) throw this.forbidden(`subscribe to ${this.showName(channel)} before reading its presence`, id);
    presenceAllowed(ns, this.showName(channel), id);
    // A read costs the engine a look-up (10,000 entries for a big room).
    this.spend(conn, 'presence reads and publishes', id);
    return this.presenceStore.read(channel, stats).catch(withId(id));
  }
}

/**
 * 5 for presence: the namespace keeps presence.
 * @param {import('./namespaces.js').Namespace} ns
 */
export function presenceAllowed(ns, channel, id) {
  if (ns.presence) return;
  const where = ns.name === '' ? 'channels outside namespaces' : `namespace ${ns.name}`;
  throw new GatewayError(ErrorCode.BAD_REQUEST, `no presence on ${channel}: ${where} lack presence: true`, id);
}

/** 5 for a delta subscription: the namespace offers deltas. */
function deltaAllowed(ns, channel, id) {
  if (ns.delta) return;
  const where = ns.name === '' ? 'channels outside namespaces do' : `namespace ${ns.name} does`;
  throw new GatewayError(ErrorCode.BAD_REQUEST, `no deltas on ${channel}: ${where} not offer them (delta: true)`, id);
}

function same(channel) {
  return channel;
}

/** Whether a connection is still there when its hook request's turn comes. */
function present(conn) {
  return () => conn[kTransport].isOpen(conn);
}

/**
 * Rethrows a hook's or the engine's refusal as the answer to the frame `id`.
 * Each refusal is made for its one call, so it takes the id itself and keeps
 * its class (a hook's refusal carries the application's close code).
 */
function withId(id) {
  return (err) => {
    if (id !== undefined && err instanceof GatewayError) err.id = id;
    throw err;
  };
}

/** @typedef {import('./namespaces.js').Namespace} Namespace */
