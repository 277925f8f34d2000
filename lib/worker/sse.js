// GET /sse?channels=a,b[&token=…]: the Server-Sent Events transport. A
// request is checked whole before the stream starts (a clear 4xx/503 for
// anything wrong), then its channels are subscribed through the same path as
// a WebSocket's subscribe with `since` (./relay.js), the cursor of
// Last-Event-ID giving each channel's `since`. From then on the stream is a
// subscriber like any other (./sse-stream.js).
import { ErrorCode, Recovery, isValidChannel, parseCursor } from '../protocol.js';
import { Namespaces } from '../namespaces.js';
import { AuthError } from './auth.js';
import { allows } from './permissions.js';
import { Deadlines } from './deadlines.js';
import { Expiry } from './expiry.js';
import { HookFailure, HookRefusal } from './hooks.js';
import { identify, kClient, kUser } from './identity.js';
import { clientIp } from './client-ip.js';
import { reply } from './http-io.js';
import { SseStream, sseTransport, readyEvent, eventData, gapEvent, withCursor } from './sse-stream.js';
import { carriedBy } from './transport.js';
import { closeReason } from './connections.js';
import { metrics, transportMetrics } from './metrics.js';

const SSE = transportMetrics('sse');
const RETRY_MS = 2000; // the browser's reconnect delay, sent as `retry:`
const RETRY_AFTER_S = 5; // a 503 for a failed hook asks for a random wait of up to this many seconds
const ANONYMOUS = Symbol('anonymous'); // under --auth none: no identity to check

export class SseStreams {
  /**
   * @param {object} options
   * @param {object} options.config resolved gateway configuration
   * @param {import('./relay.js').WorkerRelay} options.relay
   * @param {import('./subscriptions.js').Subscriptions} options.subscriptions
   * @param {import('./keepalive.js').Keepalive} options.keepalive
   * @param {import('./admission.js').Admission} options.admission shared with the WebSockets
   */
  constructor({ config, relay, subscriptions, keepalive, admission }) {
    this.config = config;
    this.relay = relay;
    this.subscriptions = subscriptions;
    this.keepalive = keepalive;
    this.admission = admission;
    this.count = 0; // open streams
    this.namespaces = new Namespaces(config);
    this.hooks = admission.hooks;
    if (admission.identified) {
      this.deadlines = new Deadlines((stream) => this.expiry.passed(stream));
      this.expiry = new Expiry(this.deadlines, this.hooks);
    }
    const self = this;
    this.onClose = function onClose() {
      self.closed(carriedBy(this));
    };
  }

  /** The request listener's part for GET /sse. */
  request(req, res) {
    const refuse = (status, error, message) => reply(res, status, { error, message });
    if (req.method !== 'GET') return reply(res, 405, { error: 'method_not_allowed' }, { Allow: 'GET' });
    if (req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) !== 0) {
      return refuse(400, ErrorCode.BAD_REQUEST, 'GET /sse takes no request body');
    }
    const refusal = this.admission.check(req);
    if (refusal !== undefined) return refuse(refusal.status, refusal.reason, refusal.message);
    const ip = clientIp(req, this.config.trustForwarded);
    let query;
    try {
      query = this.parse(req.url, req.headers['last-event-id']);
    } catch (err) {
      return refuse(400, err.code ?? ErrorCode.BAD_REQUEST, err.message);
    }
    if (!this.admission.ipsInPrimary) return this.authenticate(req, res, ip, query);
    this.admission.reserveIp(ip).then((refused) => {
      if (refused !== undefined) return refuse(refused.status, refused.reason, refused.message);
      if (req.socket.destroyed) return this.admission.releaseIp(ip);
      this.authenticate(req, res, ip, query);
    });
  }

  /** The credential, if the gateway asks for one, then the stream. Past reserveIp(): a refusal gives the IP's place back. */
  authenticate(req, res, ip, query) {
    query.client = this.admission.clientId();
    if (this.admission.hook) {
      this.admission.identify(req, query.client, 'sse', ip, () => !req.socket.destroyed).then((result) => this.verified(req, res, ip, query, result));
      return;
    }
    if (!this.admission.jwt) return this.verified(req, res, ip, query, ANONYMOUS);
    if (typeof query.token !== 'string' || query.token === '') {
      metrics.authFailures.inc({ reason: 'missing' });
      this.admission.releaseIp(ip);
      return reply(res, 401, { error: ErrorCode.UNAUTHORIZED, message: 'pass a token: /sse?channels=…&token=…' });
    }
    this.admission.verify(query.token).then((result) => this.verified(req, res, ip, query, result));
  }

  /**
   * @returns {{channels: string[], since: Array<object|undefined>, token?: string}}
   * @throws {Error} with the error code to answer 400 with
   */
  parse(url, lastEventId) {
    const params = new URL(url, 'http://sse').searchParams;
    const list = params.get('channels');
    if (list === null || list === '') throw error(ErrorCode.BAD_REQUEST, 'name the channels: /sse?channels=a,b');
    const max = this.config.maxSubscriptions;
    // Counted before anything else is looked at, so a huge list costs one split.
    const channels = list.split(',', max + 1);
    if (channels.length > max) throw error(ErrorCode.TOO_MANY_SUBSCRIPTIONS, `at most ${max} channels per stream`);
    for (const channel of channels) {
      if (!isValidChannel(channel)) {
        throw error(ErrorCode.INVALID_CHANNEL, `invalid channel ${JSON.stringify(channel.slice(0, 140))}: 1 to 128 of A-Z a-z 0-9 _ . : @ / -`);
      }
      if (this.namespaces.lookup(channel) === undefined) throw error(ErrorCode.INVALID_CHANNEL, `unknown namespace in ${channel}`);
    }
    if (new Set(channels).size !== channels.length) throw error(ErrorCode.BAD_REQUEST, 'a channel is named twice');
    const cursor = lastEventId ?? params.get('lastEventId');
    const since = cursor === null || cursor === '' ? channels.map(() => undefined) : parseCursor(cursor, channels.length);
    return { channels, since, token: params.get('token') ?? undefined };
  }

  /**
   * The identity (a token's, the connect hook's, or ANONYMOUS), then the
   * subscribe hooks of the channels whose namespace has one, then the user's
   * place in the cluster's count, then the stream.
   */
  verified(req, res, ip, query, result) {
    if (req.socket.destroyed) return this.admission.releaseIp(ip);
    const refuse = (status, reason, code, message, headers) => {
      metrics.authFailures.inc({ reason });
      this.admission.releaseIp(ip);
      reply(res, status, { error: code, message }, headers);
    };
    if (result instanceof AuthError) return refuse(401, result.reason, result.code, result.message);
    if (result instanceof HookFailure || result instanceof HookRefusal) return this.hookSaidNo(result, refuse);
    const user = result === ANONYMOUS ? null : result.user;
    if (result !== ANONYMOUS) {
      const denied = query.channels.find((channel) => !allows(result.permissions.subscribe, channel, user));
      if (denied !== undefined) return refuse(403, 'forbidden', ErrorCode.FORBIDDEN, `the token does not allow subscribe on ${denied}`);
    }
    this.subscribeHooks(query, user, () => !req.socket.destroyed).then((outcome) => {
      if (outcome !== undefined) return this.hookSaidNo(outcome, refuse);
      if (req.socket.destroyed) return this.admission.releaseIp(ip);
      if (result === ANONYMOUS) return this.open(req, res, ip, query);
      const users = this.admission.users;
      this.admission.admitUser(user).then((refused) => {
        if (refused !== undefined) return refuse(429, refused.reason, refused.code, refused.message);
        if (req.socket.destroyed) {
          this.admission.releaseIp(ip);
          return users.remove(null, user); // gone while the primary counted
        }
        const stream = this.open(req, res, ip, query, result);
        stream[kUser] = user;
        users.add(stream, user);
        this.expiry.set(stream, result.expiresAt);
      });
    });
  }

  /** A refusal (403) or a failure (503, with a random Retry-After so clients spread out) from a hook. */
  hookSaidNo(outcome, refuse) {
    if (outcome instanceof HookRefusal) return refuse(403, 'refused', ErrorCode.FORBIDDEN, outcome.message);
    const retryAfter = String(1 + Math.floor(Math.random() * RETRY_AFTER_S));
    refuse(503, 'hook_failed', ErrorCode.UNAVAILABLE, 'the application backend is unavailable: retry later', { 'Retry-After': retryAfter });
  }

  /**
   * Asks the subscribe hook for each channel of the stream whose namespace wants it.
   * @returns {Promise<HookRefusal|HookFailure|undefined>} the first no, if any
   */
  async subscribeHooks({ channels, client }, user, present) {
    const hooked = channels.filter((channel) => this.namespaces.lookup(channel).subscribeHook);
    if (hooked.length === 0) return undefined;
    const outcomes = await Promise.all(hooked.map((channel) => this.hooks.subscribe({ client, user, channel }, present)));
    return outcomes.find((outcome) => outcome !== true);
  }

  /** Starts the stream: the response head, `retry:`, then the subscribes. */
  open(req, res, ip, { channels, since, client }, identity) {
    const socket = req.socket;
    // The stream writes to the socket itself: the response object is let go (~1 KB a stream).
    res.detachSocket(socket);
    const cors = corsHeaders(req.headers.origin, this.admission.hook, this.admission.origins !== undefined);
    socket.setNoDelay(true);
    socket.write(
      'HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nCache-Control: no-cache, no-transform\r\n' +
        `X-Accel-Buffering: no\r\nConnection: close\r\n${cors}\r\nretry: ${RETRY_MS}\n\n`
    );
    const stream = new SseStream(socket, channels);
    stream[kClient] = client;
    if (identity !== undefined) identify(stream, identity); // before its subscriptions go live and join presence
    socket.on('close', this.onClose);
    this.admission.admitted(stream, ip);
    this.keepalive.add(stream);
    this.count++;
    SSE.added();
    for (let i = 0; i < channels.length; i++) this.subscribe(stream, i, since[i]);
    return stream;
  }

  /** As Connections.subscribe: at once when this worker is up to date on the channel, else through the primary. */
  subscribe(stream, i, since) {
    const channel = stream.channels[i];
    const upToDate = this.subscriptions.upToDate(channel, since, this.namespaces.lookup(channel).latest);
    if (since !== undefined) stream.positions[i] = since;
    const local = this.subscriptions.add(stream, channel);
    if (!upToDate) return this.relay.subscribe({ owner: this, ws: stream, channel, local, since });
    if (since !== undefined) metrics.recoveries.inc({ result: Recovery.RECOVERED });
    this.activate(stream, i, local);
  }

  /** The primary's answer to a stream's subscribe: the replay (or a `latest` namespace's latest message) or the gap, then live. */
  answered({ ws: stream, channel, local, since }, { current, epoch, seq, result, replay }) {
    if (!sseTransport.isOpen(stream) || !current) return;
    if (result !== undefined) metrics.recoveries.inc({ result });
    const i = stream.channels.indexOf(channel);
    const max = this.config.maxBuffered;
    if (since !== undefined && replay === undefined) {
      stream.positions[i] = local;
      sseTransport.write(stream, gapEvent(stream, channel), max);
    } else if (replay !== undefined) {
      const at = { seq: seq - replay.length, epoch };
      stream.positions[i] = at;
      for (const dataJson of replay) {
        at.seq++;
        sseTransport.write(stream, withCursor(stream, eventData(channel, at.seq, dataJson)), max);
      }
    }
    this.activate(stream, i, local);
  }

  /** The stream receives the channel live; once all its channels are, it says so with the full cursor. */
  activate(stream, i, local) {
    this.subscriptions.activate(stream, local);
    stream.positions[i] = local;
    if (--stream.pending === 0) sseTransport.write(stream, readyEvent(stream, stream[kClient]), this.config.maxBuffered);
  }

  closed(stream) {
    stream.closed();
    this.keepalive.remove(stream);
    if (stream[kUser] !== undefined) {
      this.deadlines.remove(stream);
      this.admission.users.remove(stream, stream[kUser]);
    }
    this.subscriptions.removeAll(stream);
    this.admission.left(stream);
    this.count--;
    SSE.closed(closeReason(stream.closeCode));
  }
}

function error(code, message) {
  return Object.assign(new Error(message), { code });
}

// The stream's CORS headers. Credentials (the page's cookies) only under
// --auth hook, where the connect hook saw this Origin and admitted it;
// otherwise the gateway authenticates by token or not at all.
function corsHeaders(origin, withCredentials, listed) {
  if (origin === undefined) return '';
  if (withCredentials) return `Access-Control-Allow-Origin: ${origin}\r\nAccess-Control-Allow-Credentials: true\r\nVary: Origin\r\n`;
  return listed ? `Access-Control-Allow-Origin: ${origin}\r\nVary: Origin\r\n` : 'Access-Control-Allow-Origin: *\r\n';
}
