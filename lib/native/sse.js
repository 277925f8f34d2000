// GET /sse?channels=a,b[&token=…]: the Server-Sent Events way in. A
// request is one subscribe per channel, decided whole before the stream
// starts: each channel goes through the command core
// (../core/commands.js), as a WebSocket's subscribe would, and the first
// refusal answers the request with its status (a clear 4xx/503). Then its
// channels are joined through the same path as a WebSocket's subscribe with
// `since` (../worker/relay.js), the cursor of Last-Event-ID giving each channel's
// `since`. From then on the stream is a subscriber like any other
// (../transport/sse-stream.js).
import { ErrorCode, GatewayError, toldToClient } from '../core/errors.js';
import { parseCursor } from '../protocol/cursor.js';
import { ANONYMOUS, identify } from '../core/identity.js';
import { kSession } from '../core/symbols.js';
import { clientIp } from '../session/client-ip.js';
import { reply } from '../transport/http-io.js';
import { SseStream, sseTransport, readyEvent, eventData, gapEvent, withCursor } from '../transport/sse-stream.js';
import { carriedBy, carry } from '../transport/transport.js';
import { defaultsOf } from '../config/options.js';
import { metrics, transportMetrics } from '../session/metrics.js';

const RETRY_MS = 2000; // the browser's reconnect delay, sent as `retry:`
const RETRY_AFTER_S = 5; // a 503 asks for a random wait of up to this many seconds

// The options that default to their flags' (lib/config/options.js).
const DEFAULTS = defaultsOf('trust-forwarded', 'max-subscriptions', 'max-buffered');

export class SseStreams {
  /**
   * @param {object} options
   * @param {boolean} [options.trustForwarded] --trust-forwarded: the client's IP is X-Forwarded-For's last
   * @param {number} [options.maxSubscriptions] --max-subscriptions: channels per stream
   * @param {number} [options.maxBuffered] --max-buffered: bytes queued to one stream before it is dropped
   * @param {import('../transport/coalesce.js').WriteCoalescer} options.coalescer the worker's, for its streams' writes
   * @param {import('../worker/relay.js').WorkerRelay} options.relay
   * @param {import('../session/subscriptions.js').Subscriptions} options.subscriptions
   * @param {import('../session/admission.js').Admission} options.admission shared with the WebSockets
   * @param {import('../session/sessions.js').Sessions} options.sessions open to close, every transport
   * @param {import('../core/commands.js').Commands} options.commands the rules
   */
  constructor(options) {
    const { trustForwarded, maxSubscriptions, maxBuffered, coalescer, relay, subscriptions, admission, sessions, commands } = { ...DEFAULTS, ...options };
    this.coalescer = coalescer;
    this.trustForwarded = trustForwarded;
    this.maxSubscriptions = maxSubscriptions;
    this.maxBuffered = maxBuffered;
    this.relay = relay;
    this.subscriptions = subscriptions;
    this.admission = admission;
    this.sessions = sessions;
    this.commands = commands;
    this.count = 0; // open streams (counted by the session)
    this.opened = 0;
    this.metrics = transportMetrics('sse');
    const self = this;
    this.onClose = function onClose() {
      self.closed(carriedBy(this));
    };
  }

  /** The request listener's part for GET /sse. */
  request(req, res) {
    if (req.method !== 'GET') return refuse(res, new GatewayError(ErrorCode.METHOD_NOT_ALLOWED, 'GET /sse only'), { Allow: 'GET' });
    let query;
    try {
      if (req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) !== 0) {
        throw new GatewayError(ErrorCode.BAD_REQUEST, 'GET /sse takes no request body');
      }
      this.admission.check(req);
      query = this.parse(req.url, req.headers['last-event-id']);
    } catch (err) {
      return refuse(res, err);
    }
    const ip = clientIp(req, this.trustForwarded);
    this.admission.reserveIp(ip).then(
      () => this.start(req, res, ip, query),
      (err) => refuse(res, err)
    );
  }

  /**
   * The stream's shape: its channels (at most --max-subscriptions, each
   * named once, each a valid channel of a known namespace: checked here, by
   * the core's own rule, so a bad channel is answered before any
   * credential) and where each resumes.
   * @returns {{channels: string[], since: Array<object|undefined>, token?: string}}
   * @throws {GatewayError}
   */
  parse(url, lastEventId) {
    const params = new URL(url, 'http://sse').searchParams;
    const list = params.get('channels');
    if (list === null || list === '') throw new GatewayError(ErrorCode.BAD_REQUEST, 'name the channels: /sse?channels=a,b');
    const max = this.maxSubscriptions;
    // Counted before anything else is looked at, so a huge list costs one split.
    const channels = list.split(',', max + 1);
    if (channels.length > max) throw new GatewayError(ErrorCode.TOO_MANY_SUBSCRIPTIONS, `at most ${max} channels per stream`);
    for (const channel of channels) this.commands.namespace(channel);
    if (new Set(channels).size !== channels.length) throw new GatewayError(ErrorCode.BAD_REQUEST, 'a channel is named twice');
    const cursor = lastEventId ?? params.get('lastEventId');
    const since = cursor === null || cursor === '' ? channels.map(() => undefined) : parseCursor(cursor, channels.length);
    return { channels, since, token: params.get('token') ?? undefined };
  }

  /**
   * Past the door: the identity (a token's, the connect hook's, or the
   * anonymous one), each channel's subscribe through the core (grants,
   * rate, subscribe hooks), the user's place in the cluster's count, then
   * the stream. Any refusal gives the IP's place back.
   */
  async start(req, res, ip, { channels, since, token }) {
    const present = () => !req.socket.destroyed;
    const stream = new SseStream(req.socket, channels);
    this.sessions.begin(stream, this, this.admission.clientId());
    try {
      const identity = await this.identity(req, stream, ip, token, present);
      identify(stream, identity);
      await Promise.all(channels.map((channel, i) => this.commands.subscribe(stream, channel, since[i])));
      if (identity !== ANONYMOUS && present()) await this.sessions.admit(stream, identity);
    } catch (err) {
      this.admission.releaseIp(ip);
      if (!(err instanceof GatewayError)) throw err;
      if (err.reason !== undefined) metrics.authFailures.inc({ reason: err.reason });
      return refuse(res, err);
    }
    if (!present()) return this.admission.releaseIp(ip); // gone while it was decided (the user's place already given back)
    this.open(req, res, ip, stream, since);
  }

  /** @returns {Promise<import('../core/identity.js').Identity>} who the request's client is; rejects with the refusal */
  identity(req, stream, ip, token, present) {
    if (this.admission.hook) return this.admission.identify(req, stream[kSession].id, 'sse', ip, present);
    if (!this.admission.jwt) return Promise.resolve(ANONYMOUS);
    if (typeof token !== 'string' || token === '') {
      metrics.authFailures.inc({ reason: 'missing' });
      return Promise.reject(new GatewayError(ErrorCode.UNAUTHORIZED, 'pass a token: /sse?channels=…&token=…'));
    }
    return this.admission.verify(token);
  }

  /** Starts the stream: the response head, `retry:`, then the subscribes. */
  open(req, res, ip, stream, since) {
    const socket = req.socket;
    // The stream writes to the socket itself: the response object is let go (~1 KB a stream).
    res.detachSocket(socket);
    const cors = corsHeaders(req.headers.origin, this.admission.hook, this.admission.origins !== undefined);
    socket.setNoDelay(true);
    socket.write(
      'HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nCache-Control: no-cache, no-transform\r\n' +
        `X-Accel-Buffering: no\r\nConnection: close\r\n${cors}\r\nretry: ${RETRY_MS}\n\n`
    );
    carry(socket, stream);
    socket.on('close', this.onClose);
    this.sessions.opened(stream, ip);
    for (let i = 0; i < stream.channels.length; i++) this.subscribe(stream, i, since[i]);
  }

  /** Joins the stream's i-th channel through the session, from `since` when its cursor gave one. */
  subscribe(stream, i, since) {
    const channel = stream.channels[i];
    if (since !== undefined) stream.positions[i] = since;
    this.sessions.join({ owner: this, conn: stream, channel, latest: this.commands.namespace(channel).latest, since, i });
  }

  /** Where a join ended: the replay (or a `latest` namespace's latest message) or the gap, then live. */
  joined({ conn: stream, channel, since, i, local }, { live, epoch, seq, replay, recovered }) {
    if (!live || !sseTransport.isOpen(stream)) return;
    const max = this.maxBuffered;
    if (since !== undefined && replay === undefined && recovered !== true) {
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

  /** A stream's joins wait for nothing: every check was made before it started. */
  joinRefused() {}

  /** The stream receives the channel live; once all its channels are, it says so with the full cursor. */
  activate(stream, i, local) {
    stream.positions[i] = local;
    if (--stream.pending === 0) sseTransport.write(stream, readyEvent(stream, stream[kSession].id), this.maxBuffered);
  }

  closed(stream) {
    stream.closed();
    this.sessions.closed(stream, stream.closeCode);
  }
}

/** Answers a refused request with its error's status (a 503 with a random Retry-After, so clients spread out). */
function refuse(res, err, headers) {
  if (!(err instanceof GatewayError)) throw err;
  const retry = err.status === 503 ? { 'Retry-After': String(1 + Math.floor(Math.random() * RETRY_AFTER_S)) } : undefined;
  reply(res, err.status, { error: err.code, message: toldToClient(err) }, headers ?? retry);
}

// The stream's CORS headers. Credentials (the page's cookies) only under
// --auth hook, where the connect hook saw this Origin and admitted it;
// otherwise the gateway authenticates by token or not at all.
function corsHeaders(origin, withCredentials, listed) {
  if (origin === undefined) return '';
  if (withCredentials) return `Access-Control-Allow-Origin: ${origin}\r\nAccess-Control-Allow-Credentials: true\r\nVary: Origin\r\n`;
  return listed ? `Access-Control-Allow-Origin: ${origin}\r\nVary: Origin\r\n` : 'Access-Control-Allow-Origin: *\r\n';
}
