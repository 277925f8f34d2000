// Everything that happens on one WebSocket connection after the upgrade: the
// welcome, the protocol (subscribe, unsubscribe, publish, ping), the publish
// rate limit, and the close. Handlers are created once per worker and read the
// connection from `this`, so a connection costs no closures of its own.
import { randomBytes } from 'node:crypto';
import { require } from '../require.js';
import {
  CloseCode,
  ErrorCode,
  ProtocolError,
  ackFrame,
  errorFrame,
  parseClientFrame,
  pongFrame,
  welcomeFrame
} from '../protocol.js';
import { Keepalive } from './keepalive.js';
import { metrics } from './metrics.js';

const { WebSocket } = require('ws');

// Per-connection state, set only when needed: most connections never publish,
// and the IP is kept only to count connections per IP.
const kIp = Symbol('clientIp');
const kTokens = Symbol('publishTokens');
const kRefilled = Symbol('tokensRefilledAt');

const CLOSE_REASONS = new Map([
  [1000, 'normal'],
  [1001, 'going_away'],
  [1005, 'no_status'],
  [1006, 'abnormal'],
  [1008, 'policy'],
  [1009, 'too_big'],
  [1011, 'internal_error'],
  [1013, 'try_again']
]);

export class Connections {
  /**
   * @param {object} options
   * @param {object} options.config resolved gateway configuration
   * @param {number} options.worker this worker's number (1..N)
   * @param {import('./relay.js').WorkerRelay} options.relay
   * @param {import('./subscriptions.js').Subscriptions} options.subscriptions
   * @param {import('./keepalive.js').Keepalive} options.keepalive
   * @param {import('pino').Logger} options.log
   */
  constructor({ config, worker, relay, subscriptions, keepalive, log }) {
    this.config = config;
    this.worker = worker;
    this.relay = relay;
    this.subscriptions = subscriptions;
    this.keepalive = keepalive;
    this.log = log;
    this.opened = 0;
    this.count = 0; // open connections
    // Worker number and a random part, so ids stay unique across restarts.
    this.idPrefix = `${worker}-${randomBytes(4).toString('hex')}-`;
    this.perIp = new Map(); // client IP -> open connections, kept only with --max-conns-per-ip
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

  /** Whether one more connection from `ip` stays within --max-conns-per-ip. */
  allowsIp(ip) {
    const cap = this.config.maxConnsPerIp;
    return cap === 0 || (this.perIp.get(ip) ?? 0) < cap;
  }

  accept(ws, ip) {
    ws.on('message', this.onMessage);
    ws.on('pong', this.onPong);
    ws.on('close', this.onClose);
    ws.on('error', this.onError);
    if (this.config.maxConnsPerIp > 0) {
      ws[kIp] = ip;
      this.perIp.set(ip, (this.perIp.get(ip) ?? 0) + 1);
    }
    this.keepalive.add(ws);
    this.count++;
    metrics.connections.inc();
    metrics.opened.inc();
    const id = `${this.idPrefix}${(this.opened++).toString(36)}`;
    ws.send(welcomeFrame(id, this.worker, this.config.pingInterval));
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
    switch (type) {
      case 'ping':
        ws.send(pongFrame(id));
        break;
      case 'subscribe':
        this.subscribe(ws, channel, id);
        break;
      case 'unsubscribe':
        this.subscriptions.remove(ws, channel);
        ws.send(ackFrame(id));
        break;
      case 'publish':
        if (this.relay.busy) {
          this.fail(ws, new ProtocolError(ErrorCode.RATE_LIMITED, 'the gateway is busy relaying: retry shortly', id));
          return;
        }
        if (!takeToken(ws, this.config.maxPublishRate)) {
          this.fail(ws, new ProtocolError(ErrorCode.RATE_LIMITED, `over ${this.config.maxPublishRate} publishes per second`, id));
          return;
        }
        this.relay.publish(channel, JSON.stringify(frame.data));
        ws.send(ackFrame(id));
        break;
    }
  }

  subscribe(ws, channel, id) {
    if (!this.subscriptions.has(ws, channel)) {
      if (this.subscriptions.count(ws) >= this.config.maxSubscriptions) {
        const message = `at most ${this.config.maxSubscriptions} subscriptions per connection`;
        this.fail(ws, new ProtocolError(ErrorCode.TOO_MANY_SUBSCRIPTIONS, message, id));
        return;
      }
      this.subscriptions.add(ws, channel);
    }
    // Ack only once the primary routes the channel here, so the ack promises
    // delivery of every publish made after it.
    this.relay.whenRouted(channel, () => {
      if (ws.readyState === WebSocket.OPEN) ws.send(ackFrame(id));
    });
  }

  fail(ws, err) {
    if (!(err instanceof ProtocolError)) throw err;
    metrics.errors.inc({ code: err.code });
    ws.send(errorFrame(err.code, err.message, err.id));
  }

  closed(ws, code) {
    this.keepalive.remove(ws);
    this.subscriptions.removeAll(ws);
    if (this.config.maxConnsPerIp > 0) {
      const left = this.perIp.get(ws[kIp]) - 1;
      if (left > 0) this.perIp.set(ws[kIp], left);
      else this.perIp.delete(ws[kIp]);
    }
    this.count--;
    metrics.connections.dec();
    metrics.closed.inc({ reason: CLOSE_REASONS.get(code) ?? 'other' });
  }

  /**
   * Closes every client with 1001, spread evenly over `spreadMs` so they do
   * not all reconnect at the same moment, then resolves once all are gone.
   */
  async closeAll(clients, spreadMs) {
    const list = [...clients];
    const rounds = Math.max(1, Math.floor(spreadMs / 50));
    const perRound = Math.ceil(list.length / rounds);
    for (let i = 0; i < list.length; i += perRound) {
      for (const ws of list.slice(i, i + perRound)) ws.close(CloseCode.GOING_AWAY, 'server draining');
      if (i + perRound < list.length) await new Promise((r) => setTimeout(r, spreadMs / rounds));
    }
    // A peer that never answers the close frame is cut after a short grace.
    const deadline = Date.now() + 2000;
    while (list.some((ws) => ws.readyState !== WebSocket.CLOSED) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
    }
    for (const ws of list) ws.terminate();
  }
}

// Token bucket: `rate` publishes per second, bursts of up to `rate`; full
// before the first publish.
function takeToken(ws, rate) {
  const now = Date.now();
  const tokens = ws[kTokens] === undefined ? rate : Math.min(rate, ws[kTokens] + ((now - ws[kRefilled]) * rate) / 1000);
  ws[kRefilled] = now;
  if (tokens < 1) {
    ws[kTokens] = tokens;
    return false;
  }
  ws[kTokens] = tokens - 1;
  return true;
}
