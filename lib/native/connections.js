// The WebSocket way in: after the upgrade, the welcome and the frames of the
// native protocol, decoded into the command core (../core/commands.js) and
// its answers encoded back. Nothing here decides whether a command is
// allowed: the core does, the same for every way in. What is the
// WebSocket's own: the `auth` frame (a credential presented after the 101),
// the connect hook's place right after the 101, and how a subscription is
// joined and answered (an ack, a `subscribed` frame, the replay). Handlers
// are created once per worker and read the connection from `this`, so a
// connection costs no closures of its own.
import { require } from '../runtime/require.js';
import { AuthFailed, ErrorCode, GatewayError, HookFailed, toldToClient } from '../core/errors.js';
import {
  ackFrame,
  authAckFrame,
  errorFrame,
  pongFrame,
  presenceFrame,
  presenceStatsFrame,
  publishAckFrame,
  subscribeAckFrame,
  subscribedFrame,
  unsubscribedFrame,
  welcomeFrame
} from '../protocol/frames.js';
import { Keepalive } from '../session/keepalive.js';
import { socketListeners } from '../transport/ws-handlers.js';
import { kSession, kTransport } from '../core/symbols.js';
import { hasCredential, identifying, identityOf } from '../core/identity.js';
import { allows } from '../core/permissions.js';
import { TokenBucket } from '../core/token-bucket.js';
import { defaultsOf } from '../config/options.js';
import { metrics, transportMetrics } from '../session/metrics.js';

const { WebSocket } = require('ws');

// Auth frames per second per connection after the first (bursts of as many):
// verifying costs CPU, so no client may make a worker verify in a loop. The
// first is free, so a connection that never refreshes holds no bucket.
const AUTH_RATE = 2;

// Who asked for a subscription: the client (answered with an ack) or the server (a `subscribed` frame).
const CLIENT = false;
const SERVER = true;

// The options that default to their flags' (lib/config/options.js).
const DEFAULTS = defaultsOf('ping-interval', 'auth-timeout', 'max-buffered');

export class Connections {
  /**
   * @param {object} options
   * @param {number} [options.pingInterval] --ping-interval, told in the welcome
   * @param {number} [options.authTimeout] --auth-timeout: ms a connection under --auth jwt may go without a valid token
   * @param {number} [options.maxBuffered] --max-buffered: bytes queued to one client before it is dropped
   * @param {number} options.worker this worker's number (1..N)
   * @param {import('../transport/coalesce.js').WriteCoalescer} options.coalescer the worker's, for its connections' writes
   * @param {import('../worker/relay.js').WorkerRelay} options.relay
   * @param {import('../session/subscriptions.js').Subscriptions} options.subscriptions
   * @param {import('../session/admission.js').Admission} options.admission the door and the credentials
   * @param {import('../session/sessions.js').Sessions} options.sessions open to close, every transport
   * @param {import('../core/commands.js').Commands} options.commands the rules
   * @param {import('pino').Logger} options.log
   */
  constructor(options) {
    const { pingInterval, authTimeout, maxBuffered, worker, coalescer, relay, subscriptions, admission, sessions, commands, log } = { ...DEFAULTS, ...options };
    this.coalescer = coalescer;
    this.pingInterval = pingInterval;
    this.maxBuffered = maxBuffered;
    this.worker = worker;
    this.relay = relay;
    this.subscriptions = subscriptions;
    this.admission = admission;
    this.sessions = sessions;
    this.commands = commands;
    this.log = log;
    this.count = 0; // open connections (counted by the session)
    this.opened = 0; // ever accepted: how ../worker/upgrade.js tells a handshake that completed
    this.metrics = transportMetrics('ws');
    // The credential a client presents itself: a token in an `auth` frame.
    this.credentialMs = admission.jwt ? authTimeout : 0;
    this.welcomeAuth = admission.jwt ? 'jwt' : admission.hook ? 'hook' : undefined;
    this.listen = socketListeners(this, log);
  }

  /** A WebSocket just upgraded: welcomed at once, or under --auth hook once the connect hook admitted it. */
  accept(ws, ip, req) {
    this.listen(ws);
    const { id } = this.sessions.begin(ws, this, this.admission.clientId());
    this.sessions.opened(ws, ip, this.credentialMs);
    if (!this.admission.hook) return void ws.send(welcomeFrame(id, this.worker, this.pingInterval, this.welcomeAuth));
    // No auth timeout: the hook's own timeout (and the bounded queue before it) ends the wait.
    identifying(ws);
    this.admission
      .identify(req, id, 'ws', ip, () => ws.readyState === WebSocket.OPEN)
      .then((identity) => this.sessions.admit(ws, identity).then(() => identity))
      .then(
        (identity) => {
          if (ws.readyState !== WebSocket.OPEN) return;
          ws.send(welcomeFrame(id, this.worker, this.pingInterval, this.welcomeAuth));
          this.serverChannels(ws, identity.channels);
        },
        (err) => this.refusedAtOpen(ws, err)
      );
  }

  /** The connect hook (or the cluster's user count) said no: the WebSocket closes with the refusal's code. */
  refusedAtOpen(ws, err) {
    if (!(err instanceof GatewayError)) throw err;
    metrics.authFailures.inc({ reason: err instanceof HookFailed ? 'hook_failed' : (err.reason ?? 'refused') });
    if (ws.readyState !== WebSocket.OPEN) return;
    ws.close(err.closeCode, toldToClient(err));
  }

  message(ws, data, isBinary) {
    Keepalive.alive(ws);
    let frame;
    try {
      frame = ws[kTransport].decode(data, isBinary); // the connection's encoding, chosen at the upgrade
      this.run(ws, frame);
    } catch (err) {
      this.fail(ws, err);
    }
  }

  /** One decoded frame, through the core; what it answers goes back as frames. */
  run(ws, frame) {
    const { type, id, channel } = frame;
    switch (type) {
      case 'auth':
        return this.authenticate(ws, frame, id);
      case 'ping':
        this.commands.identity(ws, id);
        return ws.send(pongFrame(id));
      case 'subscribe':
        return this.subscribe(ws, channel, id, frame.since, frame.delta);
      case 'unsubscribe':
        this.commands.unsubscribe(ws, channel, id);
        this.sessions.leave(ws, channel);
        return ws.send(ackFrame(id));
      case 'presence':
      case 'presence_stats': {
        const stats = type === 'presence_stats';
        return this.commands.presence(ws, channel, stats, id).then(
          (answer) => {
            if (ws.readyState !== WebSocket.OPEN) return;
            ws.send(stats ? presenceStatsFrame(id, channel, answer.clients, answer.users, answer.digest) : presenceFrame(id, channel, answer.clients));
          },
          (err) => this.fail(ws, err)
        );
      }
      case 'publish':
        return this.commands.publish(ws, channel, frame.data, id).then(
          (result) => ws.readyState === WebSocket.OPEN && result !== undefined && ws.send(publishAckFrame(id, result.seq, result.epoch)),
          (err) => this.fail(ws, err)
        );
    }
  }

  /**
   * A client's subscribe: the core's checks (and hook), then the session's
   * join; a channel already held is answered where it stands.
   * @param {string} [delta] the delta algorithm asked for: later messages may come as deltas (../session/deltas.js)
   */
  subscribe(ws, channel, id, since, delta) {
    const held = this.sessions.held(ws, channel);
    if (held !== undefined) {
      if (!held.live) throw new GatewayError(ErrorCode.BAD_REQUEST, `a subscribe to ${channel} is already under way`, id);
      return ws.send(subscribeAckFrame(id, held.local.seq, held.local.epoch));
    }
    const allowed = this.commands.subscribe(ws, channel, since, id, delta);
    const wait = allowed instanceof Promise ? allowed : undefined;
    const ns = wait === undefined ? allowed : this.commands.namespace(channel, id);
    this.sessions.join({ owner: this, conn: ws, channel, latest: ns.latest, id, since, delta, server: CLIENT, wait });
  }

  /**
   * A subscription the server makes (the credential's `channels`, the
   * server API's subscribe): no grant asked, no limit applied (the server
   * decided), the name and namespace checked as for any subscribe;
   * announced with a `subscribed` frame, recovered from `since` like a
   * client's own.
   * @param {() => void} [ended] called once the join has ended (live or not), or at once for a channel held already
   * @returns {boolean} whether the connection holds the channel now
   * @throws {GatewayError} invalid_channel for a bad name or an unknown namespace
   */
  serverSubscribe(ws, channel, since, ended) {
    const ns = this.commands.namespace(channel);
    if (ws.readyState !== WebSocket.OPEN) {
      ended?.();
      return false;
    }
    if (!this.subscriptions.holds(ws, channel)) this.sessions.join({ owner: this, conn: ws, channel, latest: ns.latest, since, server: SERVER, ended });
    else ended?.();
    return true;
  }

  /** @returns {boolean} whether the connection held the channel (it no longer does, and is told) */
  serverUnsubscribe(ws, channel) {
    if (ws.readyState !== WebSocket.OPEN || !this.sessions.leave(ws, channel)) return false;
    ws.send(unsubscribedFrame(channel));
    return true;
  }

  /**
   * Where a join ended (../session/sessions.js): live, with the missed
   * messages or the latest one replayed; or not (left meanwhile), and a
   * client that asked is told where the channel stands.
   */
  joined({ conn: ws, channel, id, since, server, ended }, { live, seq, epoch, recovered, replay }) {
    ended?.();
    if (ws.readyState !== WebSocket.OPEN) return;
    if (!live) {
      if (server === CLIENT) ws.send(seq === undefined ? ackFrame(id) : subscribeAckFrame(id, seq, epoch));
      return;
    }
    // With since: the missed messages; without, in a `latest` namespace: the latest one.
    const latest = since === undefined && replay !== undefined ? true : undefined;
    ws.send(joinedFrame(server, id, channel, seq, epoch, since === undefined ? undefined : (recovered ?? replay !== undefined), latest));
    if (replay === undefined) return;
    // In full, also to a delta subscriber: its deltas start after the next live message.
    const first = seq - replay.length + 1;
    const transport = ws[kTransport];
    for (let i = 0; i < replay.length; i++) {
      transport.writeMessage(ws, transport.encode(channel, first + i, epoch, replay[i]), this.maxBuffered);
    }
  }

  /** A subscribe hook (or the engine) said no. */
  joinRefused(request, err) {
    request.ended?.();
    this.fail(request.conn, err);
  }

  /** An auth frame: the first presents the connection's credential, later ones refresh it (same user only). */
  authenticate(ws, { token, since }, id) {
    if (!this.admission.jwt) throw new GatewayError(ErrorCode.BAD_REQUEST, `this gateway takes no tokens (--auth ${this.admission.hook ? 'hook' : 'none'})`, id);
    if (!hasCredential(ws)) identifying(ws);
    else if (!(ws[kSession].credentialTokens ??= new TokenBucket(AUTH_RATE)).take(AUTH_RATE)) {
      throw new GatewayError(ErrorCode.RATE_LIMITED, `over ${AUTH_RATE} auth frames per second`, id);
    }
    // A first credential refused leaves the connection where a second one is
    // checked as a first: admitted once one is accepted.
    this.admission
      .verify(token)
      .then((identity) => (identityOf(ws) === undefined ? this.admitted(ws, identity, id, since) : this.refreshed(ws, identity, id)))
      .catch((err) => this.refused(ws, err, id));
  }

  async admitted(ws, identity, id, held) {
    await this.sessions.admit(ws, identity);
    if (ws.readyState !== WebSocket.OPEN) return;
    ws.send(authAckFrame(id, identity.user, identity.expiresAt));
    this.serverChannels(ws, identity.channels, held);
  }

  refreshed(ws, identity, id) {
    if (ws.readyState !== WebSocket.OPEN) return;
    if (identityOf(ws).user !== identity.user) throw new AuthFailed(ErrorCode.UNAUTHORIZED, 'invalid', 'a refresh must carry the same sub', id);
    this.sessions.refreshed(ws, identity); // held subscriptions stay; new frames follow the new claims
    ws.send(authAckFrame(id, identity.user, identity.expiresAt));
  }

  refused(ws, err, id) {
    if (err instanceof AuthFailed) metrics.authFailures.inc({ reason: err.reason });
    this.fail(ws, err.id === undefined && err instanceof GatewayError ? new GatewayError(err.code, err.message, id) : err);
  }

  /**
   * Once admitted: the identity's `channels`, and the channels the server
   * had subscribed the client to before it reconnected (`held`, from the
   * auth frame: where it stands in each), kept where the identity names or
   * allows them; the others are announced as ended. A channel the server
   * cannot subscribe (an unknown namespace) is answered with an error frame
   * naming it; the others go ahead.
   */
  serverChannels(ws, channels, held) {
    const { permissions, user } = identityOf(ws);
    for (const channel of channels) this.serverChannel(ws, channel, held?.get(channel));
    for (const [channel, since] of held ?? []) {
      if (channels.includes(channel)) continue;
      const kept = allows(permissions.subscribe, channel, user) && this.serverChannel(ws, channel, since);
      if (!kept) ws.send(unsubscribedFrame(channel));
    }
  }

  serverChannel(ws, channel, since) {
    try {
      return this.serverSubscribe(ws, channel, since);
    } catch (err) {
      this.fail(ws, err);
      return false;
    }
  }

  /** Answers a refused command with an error frame; anything but the family's errors is a bug and goes on up. */
  fail(ws, err) {
    if (!(err instanceof GatewayError)) throw err;
    if (ws.readyState !== WebSocket.OPEN) return;
    metrics.errors.inc({ code: err.code });
    ws.send(errorFrame(err.code, err.message, err.id));
  }

  closed(ws, code) {
    this.sessions.closed(ws, code);
  }
}

/** The answer to a subscription: an ack to the client's subscribe, a `subscribed` frame for the server's. */
function joinedFrame(server, id, channel, seq, epoch, recovered, latest) {
  return server ? subscribedFrame(channel, seq, epoch, recovered, latest) : subscribeAckFrame(id, seq, epoch, recovered, latest);
}
