// Everything that happens on one WebSocket connection after the upgrade: the
// welcome, the protocol (auth, subscribe, unsubscribe, publish, ping), the
// permissions, namespaces and rate limits, the subscriptions the server makes
// (the token's `channels`, the server API's subscribe), and the close. Handlers are created once per worker and read the
// connection from `this`, so a connection costs no closures of its own.
import { require } from '../require.js';
import {
  CloseCode,
  ErrorCode,
  ProtocolError,
  ackFrame,
  authAckFrame,
  errorFrame,
  messageFrame,
  parseClientFrame,
  pongFrame,
  presenceFrame,
  presenceStatsFrame,
  Recovery,
  subscribeAckFrame,
  subscribedFrame,
  unsubscribedFrame,
  welcomeFrame
} from '../protocol.js';
import { Namespaces } from '../namespaces.js';
import { Keepalive } from './keepalive.js';
import { encodeText, wsTransport } from './ws-transport.js';
import { AuthError } from './auth.js';
import { presenceProblem } from './presence.js';
import { allows } from './permissions.js';
import { Deadlines } from './deadlines.js';
import { Expiry } from './expiry.js';
import { HookFailure, HookRefusal } from './hooks.js';
import { identify, kClient, kUser } from './identity.js';
import { UNAVAILABLE_MESSAGE } from './relay.js';
import { metrics, transportMetrics } from './metrics.js';

const { WebSocket } = require('ws');

// Per-connection state, set only when needed: most connections never publish.
const kTokens = Symbol('publishTokens');
const kRefilled = Symbol('tokensRefilledAt');
// Under --auth jwt or hook: the user (kUser, ./identity.js: null once an auth
// frame came or the connect hook was asked, before one was admitted), and
// its compiled permissions (shared between connections with the same
// claims), set once admitted. With the deadline (./deadlines.js), that is
// all an idle authenticated connection holds.
const kPermissions = Symbol('permissions');
const kAuthTokens = Symbol('authTokens');
const kAuthRefilled = Symbol('authTokensRefilledAt');
// Auth frames per second per connection after the first (bursts of as many):
// verifying costs CPU, so no client may make a worker verify in a loop. The
// first is free, so a connection that never refreshes holds no bucket.
const AUTH_RATE = 2;

const WS = transportMetrics('ws');

// Who asked for a subscription: the client (answered with an ack) or the server (a `subscribed` frame).
const CLIENT = false;
const SERVER = true;

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

export class Connections {
  /**
   * @param {object} options
   * @param {object} options.config resolved gateway configuration
   * @param {number} options.worker this worker's number (1..N)
   * @param {import('./relay.js').WorkerRelay} options.relay
   * @param {import('./subscriptions.js').Subscriptions} options.subscriptions
   * @param {import('./keepalive.js').Keepalive} options.keepalive
   * @param {import('./admission.js').Admission} options.admission counts, verifies, admits users
   * @param {import('./presence.js').WorkerPresence} options.presence
   * @param {import('pino').Logger} options.log
   */
  constructor({ config, worker, relay, subscriptions, keepalive, admission, presence, log }) {
    this.config = config;
    this.presence = presence;
    this.admission = admission;
    this.worker = worker;
    this.relay = relay;
    this.subscriptions = subscriptions;
    this.keepalive = keepalive;
    this.log = log;
    this.count = 0; // open connections
    this.opened = 0; // ever accepted: how ./upgrade.js tells a handshake that completed
    this.jwt = admission.jwt;
    this.identified = admission.identified;
    this.hooks = admission.hooks;
    this.namespaces = new Namespaces(config);
    if (this.identified) {
      this.deadlines = new Deadlines((ws) => this.deadlinePassed(ws));
      this.expiry = new Expiry(this.deadlines, this.hooks);
    }
    const self = this;
    this.onMessage = function onMessage(data, isBinary) {
      self.message(this, data, isBinary);
    };
    this.onPong = function onPong() {
      Keepalive.alive(this);
    };
    this.onClose = function onClose(code) {
      self.closed(this, code);
    };
    this.onError = function onError(err) {
      self.log.debug({ err: err.message, code: err.code }, 'connection error');
    };
  }

  /** A WebSocket just upgraded: welcomed at once, or under --auth hook once the connect hook admitted it. */
  accept(ws, ip, req) {
    ws.on('message', this.onMessage);
    ws.on('pong', this.onPong);
    ws.on('close', this.onClose);
    ws.on('error', this.onError);
    this.admission.admitted(ws, ip);
    this.keepalive.add(ws);
    if (this.jwt) this.deadlines.set(ws, Date.now() + this.config.authTimeout);
    this.count++;
    this.opened++;
    WS.added();
    const id = (ws[kClient] = this.admission.clientId());
    if (!this.admission.hook) return void ws.send(welcomeFrame(id, this.worker, this.config.pingInterval, this.jwt ? 'jwt' : undefined));
    // No auth timeout: the hook's own timeout (and the bounded queue before it) ends the wait.
    ws[kUser] = null;
    this.admission.identify(req, id, 'ws', ip, () => ws.readyState === WebSocket.OPEN).then((result) => this.hookAnswered(ws, id, result));
  }

  /** The connect hook's answer for a WebSocket: admitted and welcomed, or closed with the application's code (1013 on a failure). */
  hookAnswered(ws, id, result) {
    if (ws.readyState !== WebSocket.OPEN) return;
    if (result instanceof HookFailure) {
      metrics.authFailures.inc({ reason: 'hook_failed' });
      return ws.close(CloseCode.TRY_AGAIN, 'the application backend is unavailable: retry later');
    }
    if (result instanceof HookRefusal) {
      metrics.authFailures.inc({ reason: 'refused' });
      return ws.close(result.code, result.message);
    }
    this.admit(ws, result, (refused) => {
      if (refused !== undefined) {
        metrics.authFailures.inc({ reason: refused.reason });
        return ws.close(CloseCode.POLICY, refused.message);
      }
      ws.send(welcomeFrame(id, this.worker, this.config.pingInterval, 'hook'));
      this.serverChannels(ws, result.channels);
    });
  }

  message(ws, data, isBinary) {
    Keepalive.alive(ws);
    let frame;
    try {
      if (isBinary) throw new ProtocolError(ErrorCode.BAD_REQUEST, 'binary frames are not accepted; send JSON text');
      frame = parseClientFrame(data.toString());
    } catch (err) {
      this.fail(ws, err);
      return;
    }
    const { type, id, channel } = frame;
    if (type === 'auth') {
      this.authenticate(ws, frame, id);
      return;
    }
    if (this.identified && ws[kPermissions] === undefined) {
      metrics.authFailures.inc({ reason: 'missing' });
      const message = this.jwt ? 'send an auth frame with a token first' : 'wait for the welcome: the application has not admitted this connection yet';
      this.fail(ws, new ProtocolError(ErrorCode.UNAUTHORIZED, message, id));
      return;
    }
    switch (type) {
      case 'ping':
        ws.send(pongFrame(id));
        break;
      case 'subscribe':
        this.subscribe(ws, channel, id, frame.since);
        break;
      case 'unsubscribe':
        this.subscriptions.remove(ws, channel);
        ws.send(ackFrame(id));
        break;
      case 'presence':
      case 'presence_stats':
        this.readPresence(ws, channel, id, type === 'presence_stats');
        break;
      case 'publish': {
        const ns = this.namespace(ws, channel, id);
        if (ns === undefined) return;
        if (!ns.clientPublish) {
          this.fail(ws, new ProtocolError(ErrorCode.FORBIDDEN, `only the server publishes in namespace ${ns.name}`, id));
          return;
        }
        if (this.identified && !this.permitted(ws, 'publish', channel, id)) return;
        if (this.relay.busy) {
          this.fail(ws, new ProtocolError(ErrorCode.RATE_LIMITED, 'the gateway is busy relaying: retry shortly', id));
          return;
        }
        if (this.relay.unavailable) {
          this.fail(ws, new ProtocolError(ErrorCode.UNAVAILABLE, UNAVAILABLE_MESSAGE, id));
          return;
        }
        if (!takeToken(ws, this.config.maxPublishRate, kTokens, kRefilled)) {
          this.fail(ws, new ProtocolError(ErrorCode.RATE_LIMITED, `over ${this.config.maxPublishRate} publishes per second`, id));
          return;
        }
        const dataJson = JSON.stringify(frame.data);
        if (ns.publishHook) this.publishHooked(ws, channel, dataJson, frame.data, id);
        else this.relay.publish(channel, dataJson, ws, id);
        break;
      }
    }
  }

  /** A publish in a namespace with publishHook: published as sent, or as the application rewrote it, or refused. */
  publishHooked(ws, channel, dataJson, data, id) {
    this.hooks.publish({ client: ws[kClient], user: ws[kUser] ?? null, channel, data }, () => ws.readyState === WebSocket.OPEN).then((outcome) => {
      if (ws.readyState !== WebSocket.OPEN || this.hookRefused(ws, outcome, 'publish', channel, id)) return;
      this.relay.publish(channel, outcome.dataJson ?? dataJson, ws, id);
    });
  }

  /** @returns {boolean} whether a subscribe or publish hook said no (the client is told: forbidden, or unavailable) */
  hookRefused(ws, outcome, action, channel, id) {
    if (outcome instanceof HookFailure) {
      this.fail(ws, new ProtocolError(ErrorCode.UNAVAILABLE, `the application backend could not decide on this ${action}: retry shortly`, id));
      return true;
    }
    if (!(outcome instanceof HookRefusal)) return false;
    metrics.authFailures.inc({ reason: 'forbidden' });
    this.fail(ws, new ProtocolError(ErrorCode.FORBIDDEN, `the application does not allow ${action} on ${channel}: ${outcome.message}`, id));
    return true;
  }

  /** A client's subscribe: the permissions, then the namespace's subscribe hook if it has one, then join(). */
  subscribe(ws, channel, id, since) {
    const ns = this.namespace(ws, channel, id);
    if (ns === undefined) return;
    // A channel the token does not allow is forbidden, with `since` or not: nothing replayed.
    if (this.identified && !this.permitted(ws, 'subscribe', channel, id)) return;
    if (!ns.subscribeHook) return this.subscribeAllowed(ws, channel, id, since, ns);
    // A hook call costs the backend: a client asking in a loop spends its publish tokens.
    if (!takeToken(ws, this.config.maxPublishRate, kTokens, kRefilled)) {
      this.fail(ws, new ProtocolError(ErrorCode.RATE_LIMITED, `over ${this.config.maxPublishRate} hooked subscribes and publishes per second`, id));
      return;
    }
    this.hooks.subscribe({ client: ws[kClient], user: ws[kUser] ?? null, channel }, () => ws.readyState === WebSocket.OPEN).then((outcome) => {
      if (ws.readyState === WebSocket.OPEN && !this.hookRefused(ws, outcome, 'subscribe', channel, id)) this.subscribeAllowed(ws, channel, id, since, ns);
    });
  }

  /**
   * Subscribes at once when this worker already receives the channel and
   * nothing needs replaying; otherwise asks the primary (./relay.js), and
   * answered() completes it.
   */
  subscribeAllowed(ws, channel, id, since, ns) {
    const subscriptions = this.subscriptions;
    if (subscriptions.has(ws, channel)) {
      const local = subscriptions.channel(channel);
      if (local.has(ws)) ws.send(subscribeAckFrame(id, local.seq, local.epoch));
      else this.fail(ws, new ProtocolError(ErrorCode.BAD_REQUEST, `a subscribe to ${channel} is already under way`, id));
      return;
    }
    if (subscriptions.count(ws) >= this.config.maxSubscriptions) {
      const message = `at most ${this.config.maxSubscriptions} subscriptions per connection`;
      this.fail(ws, new ProtocolError(ErrorCode.TOO_MANY_SUBSCRIPTIONS, message, id));
      return;
    }
    const upToDate = subscriptions.upToDate(channel, since, ns.latest);
    // A recovery costs the primary a look-up and a replay: a client asking in
    // a loop spends its publish tokens.
    if (!upToDate && since !== undefined && !takeToken(ws, this.config.maxPublishRate, kTokens, kRefilled)) {
      this.fail(ws, new ProtocolError(ErrorCode.RATE_LIMITED, `over ${this.config.maxPublishRate} recoveries and publishes per second`, id));
      return;
    }
    this.join(ws, channel, id, since, upToDate, CLIENT);
  }

  /**
   * A presence or presence_stats frame: in a presence namespace, with the
   * subscribe permission; a read costs the engine a look-up (10,000 entries
   * for a big room), so it spends a publish token.
   */
  readPresence(ws, channel, id, stats) {
    const ns = this.namespace(ws, channel, id);
    if (ns === undefined) return;
    const problem = presenceProblem(ns, channel, id);
    if (problem !== undefined) return this.fail(ws, problem);
    if (this.jwt && !this.permitted(ws, 'subscribe', channel, id)) return;
    if (!takeToken(ws, this.config.maxPublishRate, kTokens, kRefilled)) {
      return this.fail(ws, new ProtocolError(ErrorCode.RATE_LIMITED, `over ${this.config.maxPublishRate} presence reads and publishes per second`, id));
    }
    this.presence.read(channel, stats).then(
      (answer) => {
        if (ws.readyState !== WebSocket.OPEN) return;
        ws.send(stats ? presenceStatsFrame(id, channel, answer.clients, answer.users, answer.digest) : presenceFrame(id, channel, answer.clients));
      },
      (err) => {
        if (ws.readyState === WebSocket.OPEN) this.fail(ws, Object.assign(err, { id }));
      }
    );
  }

  /**
   * A subscription the server makes: no permission asked, no limit applied
   * (the server decided); announced with a `subscribed` frame, recovered
   * from `since` like a client's own.
   * @returns {boolean} whether the connection holds the channel now
   */
  serverSubscribe(ws, channel, since) {
    const ns = this.namespaces.lookup(channel);
    if (ws.readyState !== WebSocket.OPEN || ns === undefined) return false;
    if (this.subscriptions.has(ws, channel)) return true;
    this.join(ws, channel, undefined, since, this.subscriptions.upToDate(channel, since, ns.latest), SERVER);
    return true;
  }

  /** @returns {boolean} whether the connection held the channel (it no longer does, and is told) */
  serverUnsubscribe(ws, channel) {
    if (ws.readyState !== WebSocket.OPEN || !this.subscriptions.has(ws, channel)) return false;
    this.subscriptions.remove(ws, channel);
    ws.send(unsubscribedFrame(channel));
    return true;
  }

  join(ws, channel, id, since, upToDate, server) {
    const subscriptions = this.subscriptions;
    const local = subscriptions.add(ws, channel);
    if (!upToDate) {
      this.relay.subscribe({ owner: this, ws, channel, local, id, since, server });
      return;
    }
    subscriptions.activate(ws, local);
    if (since !== undefined) metrics.recoveries.inc({ result: Recovery.RECOVERED });
    ws.send(joinedFrame(server, id, channel, local.seq, local.epoch, since === undefined ? undefined : true));
  }

  /** The primary's answer to a subscribe this worker could not answer itself. */
  answered({ ws, channel, local, id, since, server }, { current, epoch, seq, result, replay }) {
    if (ws.readyState !== WebSocket.OPEN) return;
    // Unsubscribed while asking, or already live through an earlier request:
    // say where the channel stands (to a client that asked), replay nothing.
    if (!current || !this.subscriptions.has(ws, channel) || local.has(ws)) {
      if (server === CLIENT) ws.send(subscribeAckFrame(id, seq, epoch));
      return;
    }
    this.subscriptions.activate(ws, local);
    if (result !== undefined) metrics.recoveries.inc({ result });
    // With since: the missed messages; without, in a `latest` namespace: the latest one.
    const latest = since === undefined && replay !== undefined ? true : undefined;
    ws.send(joinedFrame(server, id, channel, seq, epoch, since === undefined ? undefined : replay !== undefined, latest));
    if (replay === undefined) return;
    const first = seq - replay.length + 1;
    for (let i = 0; i < replay.length; i++) {
      wsTransport.write(ws, encodeText(messageFrame(channel, first + i, replay[i])), this.config.maxBuffered);
    }
  }

  /** The channel's namespace; an unknown one is answered invalid_channel. */
  namespace(ws, channel, id) {
    const ns = this.namespaces.lookup(channel);
    if (ns === undefined) this.fail(ws, new ProtocolError(ErrorCode.INVALID_CHANNEL, `unknown namespace in ${channel}`, id));
    return ns;
  }

  /** Whether the connection's token allows `action` on `channel`; answers forbidden if not. */
  permitted(ws, action, channel, id) {
    if (allows(ws[kPermissions][action], channel, ws[kUser])) return true;
    metrics.authFailures.inc({ reason: 'forbidden' });
    this.fail(ws, new ProtocolError(ErrorCode.FORBIDDEN, `the token does not allow ${action} on ${channel}`, id));
    return false;
  }

  /** An auth frame: the first authenticates the connection, later ones refresh it (same sub only). */
  authenticate(ws, { token, since }, id) {
    if (!this.jwt) {
      this.fail(ws, new ProtocolError(ErrorCode.BAD_REQUEST, `this gateway takes no tokens (--auth ${this.config.auth})`, id));
      return;
    }
    if (ws[kUser] === undefined) ws[kUser] = null;
    else if (!takeToken(ws, AUTH_RATE, kAuthTokens, kAuthRefilled)) {
      this.fail(ws, new ProtocolError(ErrorCode.RATE_LIMITED, `over ${AUTH_RATE} auth frames per second`, id));
      return;
    }
    this.admission.verify(token).then((result) => this.verified(ws, result, id, since));
  }

  verified(ws, result, id, held) {
    if (ws.readyState !== WebSocket.OPEN) return;
    if (result instanceof AuthError) return this.refuse(ws, result.reason, result.code, result.message, id);
    const { user, expiresAt, permissions } = result;
    if (ws[kUser] === null) {
      return this.admit(ws, result, (refused) => {
        if (refused !== undefined) return this.refuse(ws, refused.reason, refused.code, refused.message, id);
        ws.send(authAckFrame(id, user, expiresAt));
        this.serverChannels(ws, result.channels, held);
      });
    }
    if (ws[kUser] !== user) return this.refuse(ws, 'invalid', ErrorCode.UNAUTHORIZED, 'a refresh must carry the same sub', id);
    if (ws[kPermissions] === undefined) return this.refuse(ws, 'invalid', ErrorCode.UNAUTHORIZED, 'the first auth is still under way', id);
    ws[kPermissions] = permissions; // held subscriptions stay; new frames follow the new claims
    this.expiry.set(ws, expiresAt);
    ws.send(authAckFrame(id, user, expiresAt));
  }

  /**
   * Admits an identity (a token's, the connect hook's) once the primary has
   * counted its user; `done(refusal)` says no (past --max-conns-per-user),
   * `done()` that the connection is in.
   */
  admit(ws, identity, done) {
    const { user, expiresAt, permissions } = identity;
    ws[kUser] = user;
    const users = this.admission.users;
    this.admission.admitUser(user).then((refused) => {
      if (refused !== undefined) {
        ws[kUser] = null;
        return done(refused);
      }
      if (ws.readyState !== WebSocket.OPEN) return users.remove(ws, user); // closed while the primary counted
      users.add(ws, user);
      identify(ws, identity);
      ws[kPermissions] = permissions;
      this.expiry.set(ws, expiresAt);
      done();
    });
  }

  /**
   * After the first auth: the token's `channels`, and the channels the
   * server had subscribed the client to before it reconnected (`held`, from
   * the auth frame: where it stands in each), kept where the token names or
   * allows them; the others are announced as ended.
   */
  serverChannels(ws, channels, held) {
    for (const channel of channels) this.serverSubscribe(ws, channel, held?.get(channel));
    for (const [channel, since] of held ?? []) {
      if (channels.includes(channel)) continue;
      if (!allows(ws[kPermissions].subscribe, channel, ws[kUser]) || !this.serverSubscribe(ws, channel, since)) ws.send(unsubscribedFrame(channel));
    }
  }

  refuse(ws, reason, code, message, id) {
    metrics.authFailures.inc({ reason });
    this.fail(ws, new ProtocolError(code, message, id));
  }

  /** The auth timeout of a connection that never authenticated, or its identity's end (or time to refresh it), passed. */
  deadlinePassed(ws) {
    if (ws[kPermissions] !== undefined) return this.expiry.passed(ws);
    metrics.disconnects.inc({ reason: 'auth_timeout' });
    ws.close(CloseCode.AUTH_TIMEOUT, 'no valid token in time');
  }

  fail(ws, err) {
    if (!(err instanceof ProtocolError)) throw err;
    metrics.errors.inc({ code: err.code });
    ws.send(errorFrame(err.code, err.message, err.id));
  }

  closed(ws, code) {
    this.keepalive.remove(ws);
    if (this.identified) {
      this.deadlines.remove(ws);
      if (ws[kPermissions] !== undefined) this.admission.users.remove(ws, ws[kUser]);
    }
    this.subscriptions.removeAll(ws);
    this.admission.left(ws);
    this.count--;
    WS.closed(closeReason(code));
  }
}

/** The answer to a subscription: an ack to the client's subscribe, a `subscribed` frame for the server's. */
function joinedFrame(server, id, channel, seq, epoch, recovered, latest) {
  return server ? subscribedFrame(channel, seq, epoch, recovered, latest) : subscribeAckFrame(id, seq, epoch, recovered, latest);
}

/** The reason label of gateway_connections_closed_total for a close code. */
export function closeReason(code) {
  return CLOSE_REASONS.get(code) ?? 'other';
}

// Token bucket kept on the connection under the keys given: `rate` per
// second, bursts of up to `rate`; full before the first use.
function takeToken(ws, rate, kLeft, kAt) {
  const now = Date.now();
  const tokens = ws[kLeft] === undefined ? rate : Math.min(rate, ws[kLeft] + ((now - ws[kAt]) * rate) / 1000);
  ws[kAt] = now;
  if (tokens < 1) {
    ws[kLeft] = tokens;
    return false;
  }
  ws[kLeft] = tokens - 1;
  return true;
}
