// The connections one agent process holds: it opens them at a paced rate,
// subscribes them, publishes from them and checks what they receive.
//
// Memory per connection is what limits a load generator, so the state of
// connection k lives in typed arrays indexed by k (a few bytes each), the ws
// object carries only its index, and the event handlers are created once per
// pool and shared by every connection (`this` is the ws object).
import WebSocket from 'ws';
import { performance } from 'node:perf_hooks';
import { Histogram } from './histogram.js';
import { TokenBucket } from './token-bucket.js';
import {
  SUBSCRIBE_ID,
  PUBLISH_ID,
  nowUs,
  channelName,
  padding,
  dataJson,
  subscribeFrame,
  publishFrame,
  readMessage
} from './frames.js';

// Connection states (0: not opened yet).
const CONNECTING = 1;
const OPEN = 2; // not subscribed (no --channels, or the subscribe failed)
const SUBSCRIBING = 3;
const SUBSCRIBED = 4;
const FAILED = 5;
const CLOSED = 6;

const SLOT = Symbol('slot');
const TICK_MS = 10;
const SWEEP_MS = 250;

/** The pool's phases, in order. */
export const Phase = Object.freeze({ RAMPING: 'ramping', RAMPED: 'ramped', CLOSING: 'closing', CLOSED: 'closed' });

export class Pool {
  /**
   * @param {object} plan this agent's share of the run
   * @param {number} plan.agent index of this agent (the publisher id in messages)
   * @param {number} plan.first global index of this pool's first connection
   * @param {number} plan.count connections to open
   * @param {number} plan.rate new connections per second
   * @param {number} plan.maxHandshakes handshakes in flight at most
   * @param {number} plan.handshakeTimeout ms before a handshake (or a subscribe) counts as failed
   * @param {string} plan.url target
   * @param {string[]} plan.addresses source addresses, used round-robin by global index
   * @param {number} plan.channels connection i subscribes to c<i mod channels> (0 = none)
   * @param {number} plan.messageSize bytes of data per published message
   */
  constructor(plan) {
    this.plan = plan;
    const n = plan.count;
    this.sockets = new Array(n);
    this.state = new Uint8Array(n);
    this.startedAt = new Float64Array(n); // ms (performance.now) when the handshake or subscribe began
    this.lastSeq = new Float64Array(n);
    this.pending = new Set(); // slots with a handshake or subscribe in flight
    this.phase = Phase.RAMPING;
    this.next = 0;
    this.handshaking = 0;
    this.closing = false;
    this.wsOptions = { perMessageDeflate: false, skipUTF8Validation: true, followRedirects: false, localAddress: undefined };
    this.handlers = makeHandlers(this);
    this.parsed = { seq: 0, sentUs: 0 };

    this.counts = { attempted: 0, opened: 0, open: 0, peakOpen: 0, subscribed: 0, received: 0, outOfOrder: 0, gaps: 0 };
    this.failed = {};
    this.dropped = {};
    this.subscribeErrors = {};
    this.handshakeUs = new Histogram();
    this.latencyUs = new Histogram();
    this.subscribers = new Float64Array(plan.channels);
    this.firstAttemptAt = 0;
    this.lastOpenAt = 0;

    this.publisher = { sent: 0, acked: 0, errors: {}, errorCount: 0, perChannel: new Float64Array(plan.channels), cursor: 0, counter: 0 };
    this.pad = padding(plan.messageSize);
  }

  /** Opens the connections; resolves once every one is open or failed, and subscribed or not. */
  ramp() {
    this.firstAttemptAt = wallMs();
    const bucket = new TokenBucket(this.plan.rate);
    this.sweepTimer = setInterval(() => this.sweep(), SWEEP_MS);
    return new Promise((resolve) => {
      this.rampTimer = setInterval(() => {
        const room = Math.min(this.plan.maxHandshakes - this.handshaking, this.plan.count - this.next);
        for (let n = room > 0 ? bucket.take(room) : 0; n > 0; n--) this.open(this.next++);
        if (this.next === this.plan.count && this.pending.size === 0) {
          this.stopTimers();
          this.phase = Phase.RAMPED;
          resolve();
        }
      }, TICK_MS);
    });
  }

  stopTimers() {
    clearInterval(this.rampTimer);
    clearInterval(this.sweepTimer);
    clearInterval(this.publishTimer);
  }

  open(k) {
    const g = this.plan.first + k;
    const { addresses } = this.plan;
    this.wsOptions.localAddress = addresses.length > 0 ? addresses[g % addresses.length] : undefined;
    this.state[k] = CONNECTING;
    this.startedAt[k] = performance.now();
    this.pending.add(k);
    this.handshaking++;
    this.counts.attempted++;
    const ws = new WebSocket(this.plan.url, this.wsOptions);
    ws[SLOT] = k;
    const h = this.handlers;
    ws.on('open', h.open);
    ws.on('message', h.message);
    ws.on('error', h.error);
    ws.on('close', h.close);
    ws.on('unexpected-response', h.unexpectedResponse);
    this.sockets[k] = ws;
  }

  opened(k) {
    const now = performance.now();
    this.handshaking--;
    this.handshakeUs.record((now - this.startedAt[k]) * 1000);
    const c = this.counts;
    c.opened++;
    if (++c.open > c.peakOpen) c.peakOpen = c.open;
    this.lastOpenAt = wallMs();
    if (this.plan.channels === 0) {
      this.state[k] = OPEN;
      this.pending.delete(k);
      return;
    }
    this.state[k] = SUBSCRIBING;
    this.startedAt[k] = now;
    this.sockets[k].send(subscribeFrame(channelName(this.channelOf(k))));
  }

  /** Counts a failed handshake once, whatever reports it first. */
  fail(k, reason) {
    if (this.state[k] !== CONNECTING) return;
    this.state[k] = FAILED;
    this.handshaking--;
    this.pending.delete(k);
    this.sockets[k] = undefined;
    this.failed[reason] = (this.failed[reason] ?? 0) + 1;
  }

  closed(k, code) {
    const state = this.state[k];
    if (state === CONNECTING) return this.fail(k, 'closed');
    if (state !== OPEN && state !== SUBSCRIBING && state !== SUBSCRIBED) return;
    this.counts.open--;
    if (!this.closing) this.dropped[code] = (this.dropped[code] ?? 0) + 1;
    this.pending.delete(k);
    this.state[k] = CLOSED;
    this.sockets[k] = undefined;
  }

  received(k, buf) {
    const m = this.parsed;
    if (!readMessage(buf, m)) return this.control(k, parseFrame(buf));
    const c = this.counts;
    c.received++;
    if (m.sentUs >= 0) this.latencyUs.record(nowUs() - m.sentUs);
    // The channel's seq is the order every subscriber must see: strictly consecutive.
    const last = this.lastSeq[k];
    if (last !== 0 && m.seq !== last + 1) {
      if (m.seq > last) c.gaps += m.seq - last - 1;
      else c.outOfOrder++;
    }
    if (m.seq > last) this.lastSeq[k] = m.seq;
  }

  /** Acks and errors: their id says whether they answer a subscribe or a publish. */
  control(k, frame) {
    if (frame.type === 'ack' && frame.id === SUBSCRIBE_ID && this.state[k] === SUBSCRIBING) {
      this.state[k] = SUBSCRIBED;
      this.pending.delete(k);
      this.subscribers[this.channelOf(k)]++;
      this.counts.subscribed++;
    } else if (frame.type === 'ack' && frame.id === PUBLISH_ID) {
      this.publisher.acked++;
      this.publisher.perChannel[this.channelOf(k)]++;
    } else if (frame.type === 'error' && frame.id === SUBSCRIBE_ID && this.state[k] === SUBSCRIBING) {
      this.subscribeFailed(k, frame.code);
    } else if (frame.type === 'error' && frame.id === PUBLISH_ID) {
      this.publisher.errors[frame.code] = (this.publisher.errors[frame.code] ?? 0) + 1;
      this.publisher.errorCount++;
    }
  }

  subscribeFailed(k, reason) {
    this.state[k] = OPEN;
    this.pending.delete(k);
    this.subscribeErrors[reason] = (this.subscribeErrors[reason] ?? 0) + 1;
  }

  /** Fails handshakes and subscribes that have taken longer than the timeout. */
  sweep() {
    const limit = performance.now() - this.plan.handshakeTimeout;
    for (const k of this.pending) {
      if (this.startedAt[k] > limit) continue;
      if (this.state[k] === SUBSCRIBING) {
        this.subscribeFailed(k, 'timeout');
        continue;
      }
      const ws = this.sockets[k];
      this.fail(k, 'ETIMEDOUT');
      ws.terminate();
    }
  }

  /** Starts publishing `rate` messages/s in all, round-robin over the subscribed connections. */
  startPublishing(rate) {
    const bucket = new TokenBucket(rate);
    this.publishTimer = setInterval(() => {
      for (let n = bucket.take(Infinity); n > 0; n--) if (!this.publishOne()) break;
    }, TICK_MS);
  }

  publishOne() {
    const p = this.publisher;
    const n = this.plan.count;
    for (let tries = 0; tries < n; tries++) {
      const k = p.cursor;
      p.cursor = (k + 1) % n;
      if (this.state[k] !== SUBSCRIBED) continue;
      // A connection publishes to its own channel, so its acks tell which channel was published to.
      const data = dataJson(nowUs(), this.plan.agent, p.counter++, this.pad);
      this.sockets[k].send(publishFrame(channelName(this.channelOf(k)), data));
      p.sent++;
      return true;
    }
    return false;
  }

  /** Stops publishing; resolves once every publish is acked or refused, or after `timeout` ms. */
  async stopPublishing(timeout) {
    this.stopTimers();
    const p = this.publisher;
    await until(() => p.acked + p.errorCount >= p.sent, timeout);
    return { perChannel: Array.from(p.perChannel), errors: p.errors, unacked: p.sent - p.acked - p.errorCount };
  }

  /** Closes every connection (the close handshake, so the server closes the TCP connection first). */
  async close(timeout) {
    this.phase = Phase.CLOSING;
    this.closing = true;
    this.stopTimers();
    for (const ws of this.sockets) if (ws !== undefined) ws.close(1000);
    await until(() => this.counts.open === 0, timeout);
    for (const ws of this.sockets) if (ws !== undefined) ws.terminate();
    this.phase = Phase.CLOSED;
  }

  channelOf(k) {
    return (this.plan.first + k) % this.plan.channels;
  }

  /** The figures the orchestrator polls: small, no histograms but latency. */
  status() {
    const p = this.publisher;
    return {
      phase: this.phase,
      ...this.counts,
      failed: this.failed,
      dropped: this.dropped,
      subscribeErrors: this.subscribeErrors,
      published: p.acked,
      publishSent: p.sent,
      publishErrors: p.errors,
      firstAttemptAt: this.firstAttemptAt,
      lastOpenAt: this.lastOpenAt,
      latencyUs: this.latencyUs
    };
  }

  /** Everything, for the final report. */
  final() {
    return { ...this.status(), handshakeUs: this.handshakeUs };
  }
}

/** The ws event handlers, shared by all of one pool's connections. */
function makeHandlers(pool) {
  return {
    open() {
      pool.opened(this[SLOT]);
    },
    message(data) {
      pool.received(this[SLOT], data);
    },
    error(err) {
      pool.fail(this[SLOT], err.code ?? 'error');
    },
    close(code) {
      pool.closed(this[SLOT], code);
    },
    unexpectedResponse(req, res) {
      pool.fail(this[SLOT], `HTTP ${res.statusCode}`);
      this.terminate();
    }
  };
}

function parseFrame(buf) {
  try {
    return JSON.parse(buf);
  } catch {
    return {};
  }
}

function wallMs() {
  return performance.timeOrigin + performance.now();
}

/** Resolves once `done()` is true or `timeout` ms have passed. */
function until(done, timeout) {
  const deadline = performance.now() + timeout;
  return new Promise((resolve) => {
    const check = () => {
      if (done() || performance.now() > deadline) resolve();
      else setTimeout(check, TICK_MS);
    };
    check();
  });
}
