// The gateway's client, for browsers and Node: one WebSocket that comes back
// by itself (capped exponential backoff, full jitter), authenticates and
// refreshes its token, resubscribes, notices dead connections and lost
// messages, and holds publishes while it is away. Where a WebSocket cannot
// be opened it receives over Server-Sent Events instead (./sse-socket.js).
//
// Browsers load this file as /client.js and its siblings as /client/*.js, so
// it imports them as '../client/x.js': the same file in Node (lib/client/x.js)
// and in the browser (/client/x.js). Likewise '../protocol/x.js' is
// /protocol/x.js there, and '../core/errors.js' is /core/errors.js.
import { ErrorCode, GatewayError } from '../core/errors.js';
import { isValidChannel } from '../protocol/validate.js';
import { backoffDelay } from '../client/backoff.js';
import { closePolicy } from '../client/close-policy.js';
import { Emitter } from '../client/emitter.js';
import { ClientError, ClientErrorCode } from '../client/errors.js';
import { Heartbeat } from '../client/heartbeat.js';
import { PublishQueue } from '../client/queue.js';
import { SseSocket } from '../client/sse-socket.js';
import { Subscription } from '../client/subscription.js';
import { TokenSource } from '../client/token.js';
import { Members } from '../client/members.js';
import { ENCODINGS, jsonCodec, loadEncoding } from '../client/encoding.js';
import { applyDelta, baseOf, deltasLoaded, loadDeltas } from '../client/delta.js';

export { ErrorCode, CloseCode, GatewayError } from '../core/errors.js';
export { presenceDigest } from '../protocol/presence-hash.js';
// The name the gateway's reported errors had in earlier releases of this client.
export { GatewayError as ProtocolError } from '../core/errors.js';
export { ClientError, ClientErrorCode } from '../client/errors.js';

export const State = Object.freeze({
  CONNECTING: 'connecting', // the first connection, until its welcome (and auth ack)
  OPEN: 'open',
  RECONNECTING: 'reconnecting', // waiting out a backoff delay, or dialling again
  CLOSED: 'closed' // close() was called, or the gateway refused us for good
});

// Close code reported for a socket the client gave up on itself (it may never
// see the real close of a half-open connection).
const ABANDONED = 1006;

const TRANSPORTS = ['auto', 'websocket', 'sse'];

const DEFAULTS = {
  WebSocket: globalThis.WebSocket,
  EventSource: globalThis.EventSource,
  transport: 'auto',
  encoding: 'json',
  fallbackAfter: 3,
  websocketRetry: 60000,
  backoffBase: 1000,
  backoffCap: 30000,
  withCredentials: false,
  maxQueued: 100,
  connectTimeout: 10000
};

/** Opens a client; see Client. */
export function connect(url, options) {
  return new Client(url, options);
}

/**
 * Events: 'state' (state, detail); 'recovered' ({channel, from, to}): after a
 * reconnect, the messages from seq `from` to `to` missed meanwhile are being
 * delivered; 'gap' ({channel, expected, got}): messages were lost (after a
 * reconnect, the gateway could not replay them: `got` is the seq the channel
 * resumes after), so the application should refetch; 'error' (Error with
 * .code: a server error no request was waiting for, or the reason the client
 * closed for good).
 *
 * Subscriptions the server makes (the token's `channels` claim, the server
 * API's subscribe): 'subscribed' ({channel, seq, epoch, recovered}) and
 * 'unsubscribed' ({channel}); their messages come as 'message' (data,
 * {channel, seq}). After a reconnect the client tells the gateway where it
 * stands in each (the auth frame's `since`), so they are recovered like its
 * own.
 *
 * Presence: 'presence_diff' ({type, channel, joins, leaves}: who came and
 * went, by client id, {user, info} each) for the channels of joinLeave
 * namespaces, at most one per channel per --join-leave-interval; members()
 * keeps an exact list from a presence read and the diffs after it.
 * 'resubscribed' ({channel}) once a subscription is live again after a
 * reconnect.
 */
export class Client extends Emitter {
  #state = State.CONNECTING;
  #options;
  #socket;
  #welcome;
  #timer; // the backoff delay, or the connect timeout
  #attempt = 0;
  #nextId = 1;
  #pending = new Map(); // request id -> {frame, size, resolve, reject}
  #channels = new Map(); // channel -> Subscription
  #server = new Map(); // channel -> Subscription the server made (no handlers: 'message' events)
  #queue;
  #heartbeat;
  #tokens;
  #expiresAt; // of the current token, from the last auth ack
  #refreshTimer;
  #generation = 0; // counts dropped sockets, so late answers about one are ignored
  #sse; // receiving over SSE (transport 'sse', or 'auto' after fallbackAfter failed WebSockets)
  #retryTimer; // under 'auto' on SSE: when to try a WebSocket again
  #codec; // the WebSocket's encoding (./encoding.js), or the promise of it while MessagePack loads

  /**
   * @param {string|URL} url ws:// or wss://; in a browser also http(s):// or a path such as '/ws'
   * @param {object} [options]
   * @param {Function} [options.WebSocket=globalThis.WebSocket] constructor; browsers and Node 22+ have one (pass `ws`'s for its options, e.g. a local address)
   * @param {number} [options.backoffBase=1000] ms, window of the random delay before the first reconnect; it doubles per failed attempt
   * @param {number} [options.backoffCap=30000] ms, the largest window
   * @param {number} [options.maxQueued=100] publishes held while disconnected; more are rejected with queue_full
   * @param {number} [options.connectTimeout=10000] ms from dialling to the welcome frame (and auth ack) before giving up on that attempt
   * @param {string} [options.token] a JWT sent in an auth frame on every (re)connect, for a gateway under --auth jwt
   * @param {() => Promise<string>} [options.getToken] instead of token: fetches a fresh one for every (re)connect, and
   *   for the refresh ahead of exp
   * @param {'json'|'msgpack'} [options.encoding='json'] the WebSocket's frames: JSON text, or MessagePack (binary
   *   data published and received as Uint8Array); SSE is JSON whatever this says
   * @param {'auto'|'websocket'|'sse'} [options.transport='auto'] 'auto': WebSocket, receiving over SSE after
   *   `fallbackAfter` WebSockets in a row failed, and trying a WebSocket again `websocketRetry` ms later
   * @param {Function} [options.EventSource=globalThis.EventSource] constructor, for SSE; on Node: the eventsource package
   * @param {string|URL} [options.sseUrl] the gateway's /sse; by default /sse on the host of `url`
   * @param {boolean} [options.withCredentials=false] SSE on another origin than the page's: send its cookies (for a
   *   gateway under --auth hook); a WebSocket sends them in any case
   * @param {number} [options.fallbackAfter=3] failed WebSocket attempts in a row before 'auto' falls back to SSE
   * @param {number} [options.websocketRetry=60000] ms on SSE before 'auto' tries a WebSocket again
   */
  constructor(url, options = {}) {
    super();
    const opts = { ...DEFAULTS, ...options };
    if (!TRANSPORTS.includes(opts.transport)) throw new RangeError(`transport must be one of ${TRANSPORTS.join(', ')}, got ${opts.transport}`);
    if (!ENCODINGS.includes(opts.encoding)) throw new RangeError(`encoding must be one of ${ENCODINGS.join(', ')}, got ${opts.encoding}`);
    const ws = typeof opts.WebSocket === 'function';
    const sse = typeof opts.EventSource === 'function';
    if (opts.transport !== 'sse' && !ws && !(opts.transport === 'auto' && sse)) {
      throw new TypeError('no WebSocket constructor: pass options.WebSocket (the ws package, for one)');
    }
    if (opts.transport !== 'websocket' && !sse && !(opts.transport === 'auto' && ws)) {
      throw new TypeError('no EventSource constructor: pass options.EventSource (on Node: the eventsource package)');
    }
    if (!(opts.backoffBase > 0 && opts.backoffCap >= opts.backoffBase)) {
      throw new RangeError(`need 0 < backoffBase <= backoffCap, got ${opts.backoffBase} and ${opts.backoffCap}`);
    }
    if (!(Number.isInteger(opts.maxQueued) && opts.maxQueued >= 0)) {
      throw new RangeError(`maxQueued must be a whole number >= 0, got ${opts.maxQueued}`);
    }
    this.#options = opts;
    this.url = resolveUrl(url);
    this.sseUrl = new URL(opts.sseUrl ?? '/sse', this.url.replace(/^ws/, 'http')).href;
    this.#sse = opts.transport === 'sse' || !ws;
    this.#tokens = new TokenSource(opts);
    this.#queue = new PublishQueue(opts.maxQueued);
    this.#heartbeat = new Heartbeat(
      () => this.#send({ type: 'ping' }),
      () => this.#abandon('no pong within the ping interval')
    );
    this.#codec = loadEncoding(opts.encoding);
    if (!(this.#codec instanceof Promise)) return void this.#dial();
    this.#codec.then(
      (codec) => {
        this.#codec = codec;
        if (this.#state !== State.CLOSED) this.#dial();
      },
      (err) => {
        const reason = `encoding ${opts.encoding} cannot be loaded: ${err.message}`;
        this.#finish({ code: 1000, reason });
        this.emit('error', new ClientError(ClientErrorCode.CLOSED, reason));
      }
    );
  }

  /** One of State. */
  get state() {
    return this.#state;
  }

  /** 'websocket' or 'sse': what the client uses, or will use on its next connection. */
  get transport() {
    return this.#sse ? 'sse' : 'websocket';
  }

  /** The current connection's welcome frame ({connectionId, worker, pingInterval, auth}; over SSE {transport: 'sse'}), if open. */
  get welcome() {
    return this.#state === State.OPEN ? this.#welcome : undefined;
  }

  /**
   * Calls handler(data, {channel, seq}) for every message on `channel`, now
   * and after every reconnect. With `{delta: true}` (in a namespace that
   * offers deltas) the gateway may send a message as a delta against the
   * one before: the handler still gets whole messages. The options and the
   * handler may come in either order; the first subscribe to a channel
   * decides its options.
   * @param {Function|{delta?: boolean}} handler
   * @param {{delta?: boolean}|Function} [options]
   * @returns {Promise<void>} resolved once the gateway accepted the first subscribe
   */
  subscribe(channel, handler, options) {
    if (typeof handler !== 'function') [handler, options] = [options, handler];
    if (!isValidChannel(channel)) return Promise.reject(invalidChannel(channel));
    if (this.#state === State.CLOSED) return Promise.reject(closedError());
    let sub = this.#channels.get(channel);
    if (sub === undefined) {
      sub = new Subscription(options?.delta === true);
      this.#channels.set(channel, sub);
      if (this.#state === State.OPEN) this.#subscribe(channel, sub);
    }
    if (handler !== undefined) sub.handlers.add(handler);
    return sub.ready;
  }

  /** Removes `handler` (or every handler) from `channel`; unsubscribes when none is left. */
  unsubscribe(channel, handler) {
    const sub = this.#channels.get(channel);
    if (sub === undefined) return Promise.resolve();
    if (handler !== undefined) {
      sub.handlers.delete(handler);
      if (sub.handlers.size > 0) return Promise.resolve();
    }
    this.#channels.delete(channel);
    return this.#state === State.OPEN ? this.#request({ type: 'unsubscribe', channel }) : Promise.resolve();
  }

  /**
   * Publishes `data` (any JSON) on `channel`; while disconnected it waits in
   * a bounded queue. Over SSE it is refused with `receive_only`.
   * @returns {Promise<object>} resolved with the gateway's ack once it stored
   *   the message, `{type: 'ack', id, seq, epoch}`; rejected with an error
   *   whose .code is an ErrorCode or a ClientErrorCode (`unavailable`: not
   *   confirmed stored, perhaps published)
   */
  publish(channel, data) {
    if (!isValidChannel(channel)) return Promise.reject(invalidChannel(channel));
    if (this.#state === State.CLOSED) return Promise.reject(closedError());
    if (this.#sse && this.#state === State.OPEN) return Promise.reject(receiveOnly());
    const frame = { type: 'publish', channel, data };
    return this.#state === State.OPEN ? this.#request(frame) : this.#queue.add(frame);
  }

  /**
   * Who is subscribed to `channel` (a presence namespace's), on every worker and node.
   * @returns {Promise<Object<string, {user?: string, info?: object}>>} by client id (a welcome's connectionId);
   *   rejected with too_many past the gateway's --presence-max-clients (ask presenceStats)
   */
  presence(channel) {
    return this.#read({ type: 'presence', channel }).then((answer) => answer.clients);
  }

  /**
   * @returns {Promise<{clients: number, users: number, digest: number}>} how many clients, distinct users
   *   among them, and the digest of their ids (presenceDigest: compare with a list's)
   */
  presenceStats(channel) {
    return this.#read({ type: 'presence_stats', channel }).then(({ clients, users, digest }) => ({ clients, users, digest }));
  }

  /**
   * A live member list of `channel` (a presence and joinLeave namespace's):
   * see ./members.js. Subscribes to the channel.
   * @returns {Members}
   */
  members(channel) {
    return new Members(this, channel);
  }

  #read(frame) {
    if (!isValidChannel(frame.channel)) return Promise.reject(invalidChannel(frame.channel));
    if (this.#state !== State.OPEN) return Promise.reject(new ClientError(ClientErrorCode.DISCONNECTED, 'not connected: ask again once open'));
    if (this.#sse) return Promise.reject(receiveOnly());
    return this.#request(frame);
  }

  /** Closes for good: no reconnect; queued publishes are rejected with `closed`. */
  close() {
    if (this.#state === State.CLOSED) return;
    this.#drop(ClientErrorCode.DISCONNECTED);
    this.#finish({ code: 1000, reason: 'closed by the application' });
  }

  #dial() {
    const opts = this.#options;
    if (opts.transport === 'auto' && !this.#sse && this.#attempt >= opts.fallbackAfter && typeof opts.EventSource === 'function') {
      this.#sse = true;
    }
    const socket = this.#sse
      ? new SseSocket(this.sseUrl, {
          EventSource: opts.EventSource,
          token: () => (this.#tokens.configured ? this.#tokens.get() : Promise.resolve()),
          withCredentials: opts.withCredentials
        })
      : new opts.WebSocket(this.url, this.#codec.protocols);
    if (!this.#sse && this.#codec.binaryType !== undefined) socket.binaryType = this.#codec.binaryType;
    this.#socket = socket;
    socket.onmessage = (event) => this.#receive(event.data);
    socket.onclose = (event) => this.#closed(event.code, event.reason);
    socket.onerror = noop; // a close event follows, with all there is to know
    this.#timer = setTimeout(() => this.#abandon('no welcome within connectTimeout'), this.#options.connectTimeout);
  }

  #receive(data) {
    // SSE events are JSON whatever the encoding; a frame that does not decode is not the gateway's.
    const frame = (this.#sse ? jsonCodec : this.#codec).decode(data);
    if (frame === undefined) return;
    switch (frame.type) {
      case 'message':
        return this.#deliver(frame);
      case 'ack':
        if (frame.expiresAt !== undefined) this.#expiresAt = frame.expiresAt;
        return this.#settle(frame.id, undefined, frame);
      case 'error':
        return this.#settle(frame.id, new GatewayError(frame.code, frame.message, frame.id));
      case 'presence':
      case 'presence_stats':
        return this.#settle(frame.id, undefined, frame);
      case 'presence_diff':
        return this.emit(frame.type, frame);
      case 'pong':
        return this.#heartbeat.pong();
      case 'subscribed':
        return this.#serverSubscribed(frame);
      case 'unsubscribed':
        if (this.#server.delete(frame.channel)) this.emit('unsubscribed', { channel: frame.channel });
        return;
      case 'welcome':
        // A gateway under --auth none says nothing of auth: a token is not sent.
        if (!this.#tokens.configured || frame.auth !== 'jwt') return this.#opened(frame);
        return this.#authenticate(true).then((ok) => ok && this.#opened(frame));
    }
  }

  /**
   * Sends an auth frame with a token from the source: before anything else on
   * a new connection, and again to refresh ahead of exp.
   * @returns {Promise<boolean>} whether the connection is (still) authenticated
   */
  async #authenticate(first = false) {
    const generation = this.#generation;
    try {
      const token = await this.#tokens.get();
      if (generation !== this.#generation) return false; // that connection is gone
      const held = first ? this.#held() : undefined;
      await this.#request(held === undefined ? { type: 'auth', token } : { type: 'auth', token, since: held });
    } catch (err) {
      if (generation !== this.#generation) return false;
      this.emit('error', err);
      // A refused token ends the client unless a new one can be had; a
      // refresh that failed leaves the connection to its 4003 and a reconnect.
      if (this.#state === State.OPEN) return false;
      if (err.code === ErrorCode.UNAUTHORIZED || !this.#tokens.renewable) this.#stop(1000, `auth refused: ${err.code}`);
      else this.#abandon(`no token: ${err.message}`);
      return false;
    }
    clearTimeout(this.#refreshTimer);
    if (this.#tokens.renewable) this.#refreshTimer = setTimeout(() => this.#authenticate(), TokenSource.refreshDelay(this.#expiresAt));
    return true;
  }

  #opened(welcome) {
    clearTimeout(this.#timer);
    this.#welcome = welcome;
    this.#attempt = 0;
    this.#state = State.OPEN;
    for (const [channel, sub] of this.#channels) this.#subscribe(channel, sub);
    // Queued publishes go before anything a 'state' listener may publish.
    for (const entry of this.#queue.take()) {
      if (this.#sse) entry.reject(receiveOnly());
      else this.#request(entry.frame).then(entry.resolve, entry.reject);
    }
    if (welcome.pingInterval > 0) this.#heartbeat.start(welcome.pingInterval);
    if (this.#sse && this.#options.transport === 'auto' && typeof this.#options.WebSocket === 'function') {
      this.#retryTimer = setTimeout(() => {
        this.#sse = false;
        this.#attempt = 0;
        this.#abandon('trying a WebSocket again');
      }, this.#options.websocketRetry);
    }
    this.emit('state', State.OPEN, welcome);
  }

  #deliver(frame) {
    const sub = this.#channels.get(frame.channel) ?? this.#server.get(frame.channel);
    if (sub === undefined || sub.seen(frame.seq)) return; // unsubscribed while on its way, or had already
    if (sub.delta && !this.#rebuild(sub, frame)) return;
    const expected = sub.advance(frame.seq);
    if (expected !== undefined) this.emit('gap', { channel: frame.channel, expected, got: frame.seq });
    if (sub.handlers.size === 0) this.emit('message', frame.data, frame); // a subscription the server made
    for (const handler of sub.handlers) handler(frame.data, frame);
  }

  /**
   * A delta subscription's message made whole (frame.data replaced), and
   * kept as the base of the next delta. The gateway diffs only against the
   * seq just before, sent on this connection.
   * @returns {boolean} false for a delta that cannot be applied: dropped, and the connection started over
   */
  #rebuild(sub, frame) {
    if (frame.delta !== true) {
      sub.base = baseOf(frame.data);
      return true;
    }
    try {
      if (sub.base === undefined || frame.seq !== sub.lastSeq + 1) throw new Error('no base for it');
      const whole = applyDelta(sub.base, frame.data);
      frame.data = whole.data;
      frame.delta = undefined;
      sub.base = whole.base;
      return true;
    } catch (err) {
      // Recovered from where the client stands, the next message comes whole.
      this.emit('error', new ClientError(ClientErrorCode.BAD_DELTA, `a delta on ${frame.channel} (seq ${frame.seq}) did not apply: ${err.message}`));
      this.#abandon('a delta did not apply');
      return false;
    }
  }

  /** Where the client stands in each subscription the server made: the auth frame's `since` after a reconnect. */
  #held() {
    const held = {};
    for (const [channel, sub] of this.#server) if (sub.since !== undefined) held[channel] = sub.since;
    return Object.keys(held).length === 0 ? undefined : held;
  }

  /** A `subscribed` frame: a subscription the server made, or restored from the auth frame's `since`. */
  #serverSubscribed(frame) {
    const { channel } = frame;
    let sub = this.#server.get(channel);
    if (sub === undefined) this.#server.set(channel, (sub = new Subscription()));
    this.#joined(channel, sub, sub.since, frame);
    this.emit('subscribed', { channel, seq: frame.seq, epoch: frame.epoch, recovered: frame.recovered });
  }

  /**
   * Takes an ack (or a `subscribed` frame), as it arrives, not a microtask
   * later: the replay and the live messages may come in the same read, right
   * behind it. After a recovery the replay follows from since.seq; in a
   * `latest` namespace the latest message (seq `seq`) follows.
   */
  #joined(channel, sub, since, ack) {
    if (since !== undefined && ack.recovered === true) {
      if (ack.seq > since.seq) this.emit('recovered', { channel, from: since.seq + 1, to: ack.seq });
    } else if (since !== undefined && (ack.epoch !== since.epoch || ack.seq !== since.seq)) {
      this.emit('gap', { channel, expected: since.seq + 1, got: ack.seq });
    }
    if (ack.recovered === true) sub.accepted(since);
    else sub.accepted(ack.latest === true ? { seq: ack.seq - 1, epoch: ack.epoch } : ack);
  }

  /** Subscribes, or after a reconnect resubscribes with `since` to recover what was missed. */
  #subscribe(channel, sub) {
    if (sub.delta && !deltasLoaded()) return this.#subscribeOnceLoaded(channel, sub);
    const since = sub.since;
    const frame = since === undefined ? { type: 'subscribe', channel } : { type: 'subscribe', channel, since };
    if (sub.delta && !this.#sse) frame.delta = 'fossil';
    sub.base = undefined; // the first message of a subscribe comes whole
    const acked = (ack) => this.#joined(channel, sub, since, ack);
    const again = sub.acked;
    this.#request(frame, acked).then(() => again && this.emit('resubscribed', { channel }), (err) => {
      if (this.#channels.get(channel) === sub) this.#channels.delete(channel);
      // The caller of subscribe() hears of a first refusal; a refused
      // resubscribe has no caller left to hear it.
      if (sub.acked) this.emit('error', err);
      else sub.rejectReady(err);
    });
  }

  #subscribeOnceLoaded(channel, sub) {
    const generation = this.#generation;
    loadDeltas().then(
      () => {
        if (generation === this.#generation && this.#state === State.OPEN && this.#channels.get(channel) === sub) this.#subscribe(channel, sub);
      },
      (err) => {
        this.#channels.delete(channel);
        sub.rejectReady(new ClientError(ClientErrorCode.BAD_DELTA, `deltas cannot be applied here (fossil-delta did not load: ${err.message})`));
      }
    );
  }

  /** @param {(ack: object) => void} [acked] called with the ack as it arrives, before the promise settles */
  #request(frame, acked) {
    frame.id = this.#nextId++;
    return new Promise((resolve, reject) => {
      const size = this.#send(frame); // throws (so rejects) on data JSON cannot hold
      this.#pending.set(frame.id, { frame, size, resolve, reject, acked });
    });
  }

  #settle(id, err, ack) {
    const request = this.#pending.get(id);
    if (request === undefined) {
      if (err !== undefined) this.emit('error', err);
      return;
    }
    this.#pending.delete(id);
    if (err !== undefined) return request.reject(err);
    request.acked?.(ack);
    request.resolve(ack);
  }

  /** @returns {number} the frame's length (characters in JSON, bytes in MessagePack) */
  #send(frame) {
    const encoded = (this.#sse ? jsonCodec : this.#codec).encode(frame);
    this.#socket.send(encoded);
    return encoded.length;
  }

  /** The socket closed under us: reconnect, unless its close code says not to. */
  #closed(code, reason) {
    const policy = closePolicy(code);
    // Under --auth hook the connect hook decides again on every connect: an expiry is no reason to stop.
    const renewable = this.#tokens.renewable || this.#welcome?.auth === 'hook';
    if (!policy.retry || (policy.newToken && !renewable)) return this.#stop(code, reason, policy.largest);
    this.#drop(policy.largest);
    const attempt = Math.max(this.#attempt, policy.minAttempt);
    this.#attempt = attempt + 1;
    const delay = backoffDelay(attempt, { base: this.#options.backoffBase, cap: this.#options.backoffCap });
    this.#timer = setTimeout(() => this.#dial(), delay);
    this.#state = State.RECONNECTING;
    this.emit('state', State.RECONNECTING, { code, reason, delay });
  }

  /** Gives up on a socket that stopped answering; its own close may never come. */
  #abandon(reason) {
    this.#closed(ABANDONED, reason);
  }

  /**
   * Lets go of the current socket and of the requests that were waiting on it.
   * @param {string} [largestCode] code for the largest publish in flight, when the close blames it
   */
  #drop(largestCode) {
    clearTimeout(this.#timer);
    clearTimeout(this.#refreshTimer);
    clearTimeout(this.#retryTimer);
    this.#generation++;
    this.#heartbeat.stop();
    const socket = this.#socket; // none yet while the encoding loads
    if (socket !== undefined) {
      socket.onmessage = socket.onclose = socket.onerror = noop;
      // terminate() is ws's immediate close; a browser's close() cannot wait on us.
      if (socket.terminate) socket.terminate();
      else socket.close(1000);
    }
    const pending = [...this.#pending.values()];
    this.#pending = new Map();
    const publishes = pending.filter((request) => request.frame.type === 'publish');
    const largest = largestCode && publishes.reduce((a, b) => (b.size > a.size ? b : a), publishes[0]);
    for (const request of publishes) {
      const code = request === largest ? largestCode : ClientErrorCode.DISCONNECTED;
      request.reject(new ClientError(code, `connection lost before the ack of publish ${request.frame.id}`));
    }
    // Nothing to undo for an unsubscribe (it is not resubscribed); a
    // subscribe is sent again with every reconnect.
    for (const request of pending) if (request.frame.type === 'unsubscribe') request.resolve();
    for (const request of pending) {
      if (request.frame.type === 'auth' || request.frame.type.startsWith('presence')) request.reject(new ClientError(ClientErrorCode.DISCONNECTED, 'connection lost'));
    }
  }

  /** Closes for good on the gateway's word, and reports why. */
  #stop(code, reason, largestCode) {
    this.#drop(largestCode);
    const err = new ClientError(ClientErrorCode.CLOSED, `the gateway closed the connection for good (${code} ${reason})`, code);
    this.#finish({ code, reason });
    this.emit('error', err);
  }

  #finish(detail) {
    this.#state = State.CLOSED;
    this.#queue.rejectAll(closedError());
    this.emit('state', State.CLOSED, detail);
  }
}

function noop() {}

function invalidChannel(channel) {
  return new GatewayError(ErrorCode.INVALID_CHANNEL, `invalid channel name ${JSON.stringify(String(channel)).slice(0, 140)}`);
}

function receiveOnly() {
  return new ClientError(ClientErrorCode.RECEIVE_ONLY, 'over SSE the client only receives: publish (or read presence) through your server and the server API');
}

function closedError() {
  return new ClientError(ClientErrorCode.CLOSED, 'the client is closed');
}

// Accepts what a page naturally has at hand: '/ws', or its own http(s) URL.
function resolveUrl(url) {
  const resolved = new URL(url, globalThis.location?.href);
  if (resolved.protocol === 'http:') resolved.protocol = 'ws:';
  if (resolved.protocol === 'https:') resolved.protocol = 'wss:';
  return resolved.href;
}
