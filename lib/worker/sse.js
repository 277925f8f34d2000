// GET /sse?channels=a,b[&token=…]: the Server-Sent Events transport. A
// request is checked whole before the stream starts (a clear 4xx/503 for
// anything wrong), then its channels are subscribed through the same path as
// a WebSocket's subscribe with `since` (./relay.js), the cursor of
// Last-Event-ID giving each channel's `since`. From then on the stream is a
// subscriber like any other (./sse-stream.js).
import { CloseCode, ErrorCode, Recovery, isValidChannel, parseCursor } from '../protocol.js';
import { Namespaces } from '../namespaces.js';
import { AuthError } from './auth.js';
import { allows } from './permissions.js';
import { Deadlines } from './deadlines.js';
import { clientIp } from './client-ip.js';
import { reply } from './http-io.js';
import { SseStream, sseTransport, readyEvent, eventData, gapEvent, withCursor } from './sse-stream.js';
import { carriedBy, identify, kClient } from './transport.js';
import { closeReason } from './connections.js';
import { metrics, transportMetrics } from './metrics.js';

const SSE = transportMetrics('sse');
const kUser = Symbol('user');
const RETRY_MS = 2000; // the browser's reconnect delay, sent as `retry:`

export class SseStreams {
  /**
   * @param {object} options
   * @param {object} options.config resolved gateway configuration
   * @param {import('./relay.js').WorkerRelay} options.relay
   * @param {import('./subscriptions.js').Subscriptions} options.subscriptions
   * @param {import('./keepalive.js').Keepalive} options.keepalive
   * @param {import('./admission.js').Admission} options.admission shared with the WebSockets
   * @param {() => string} options.clientId a new stream's id (./transport.js), told in its ready event
   */
  constructor({ config, relay, subscriptions, keepalive, admission, clientId }) {
    this.config = config;
    this.clientId = clientId;
    this.relay = relay;
    this.subscriptions = subscriptions;
    this.keepalive = keepalive;
    this.admission = admission;
    this.count = 0; // open streams
    this.namespaces = new Namespaces(config);
    if (admission.jwt) {
      this.deadlines = new Deadlines((stream) => {
        metrics.disconnects.inc({ reason: 'token_expired' });
        stream.close(CloseCode.TOKEN_EXPIRED);
      });
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
    if (!this.admission.jwt) return this.open(req, res, ip, query);
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

  verified(req, res, ip, query, result) {
    if (req.socket.destroyed) return this.admission.releaseIp(ip);
    const refuse = (status, reason, code, message) => {
      metrics.authFailures.inc({ reason });
      this.admission.releaseIp(ip);
      reply(res, status, { error: code, message });
    };
    if (result instanceof AuthError) return refuse(401, result.reason, result.code, result.message);
    const { user, expiresAt, permissions } = result;
    const denied = query.channels.find((channel) => !allows(permissions.subscribe, channel, user));
    if (denied !== undefined) return refuse(403, 'forbidden', ErrorCode.FORBIDDEN, `the token does not allow subscribe on ${denied}`);
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
      this.deadlines.set(stream, expiresAt);
    });
  }

  /** Starts the stream: the response head, `retry:`, then the subscribes. */
  open(req, res, ip, { channels, since }, identity) {
    const socket = req.socket;
    // The stream writes to the socket itself: the response object is let go (~1 KB a stream).
    res.detachSocket(socket);
    const origin = req.headers.origin;
    // No credentials: the gateway authenticates by token, never by cookie.
    const cors =
      origin === undefined ? '' : this.admission.origins ? `Access-Control-Allow-Origin: ${origin}\r\nVary: Origin\r\n` : 'Access-Control-Allow-Origin: *\r\n';
    socket.setNoDelay(true);
    socket.write(
      'HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nCache-Control: no-cache, no-transform\r\n' +
        `X-Accel-Buffering: no\r\nConnection: close\r\n${cors}\r\nretry: ${RETRY_MS}\n\n`
    );
    const stream = new SseStream(socket, channels);
    stream[kClient] = this.clientId();
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
