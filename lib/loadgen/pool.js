// The connections one agent process holds: it opens them at a paced rate,
// subscribes them, publishes from them and checks what they receive. The
// wire is SocketTable's; this class keeps the per-connection protocol state,
// in typed arrays indexed by connection (a few bytes each), and the figures.
import { performance } from 'node:perf_hooks';
import { SocketTable } from './sockets.js';
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

const TICK_MS = 10;
const SWEEP_MS = 250;
const NORMAL_CLOSURE = 1000;

/** The pool's phases, in order. */
export const Phase = Object.freeze({ RAMPING: 'ramping', RAMPED: 'ramped', CLOSING: 'closing', CLOSED: 'closed' });

export class Pool extends SocketTable {
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
   * @param {'ws'|'sse'} plan.transport
   */
  constructor(plan) {
    super(plan.url, plan.count, plan.transport);
    this.plan = plan;
    const n = plan.count;
    this.state = new Uint8Array(n);
    this.startedAt = new Float64Array(n); // ms (performance.now) when the handshake or subscribe began
    this.lastSeq = new Float64Array(n);
    this.pending = new Set(); // slots with a handshake or subscribe in flight
    this.phase = Phase.RAMPING;
    this.next = 0;
    this.handshaking = 0;
    this.closing = false;
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
    this.state[k] = CONNECTING;
    this.startedAt[k] = performance.now();
    this.pending.add(k);
    this.handshaking++;
    this.counts.attempted++;
    this.connect(k, addresses.length > 0 ? addresses[g % addresses.length] : undefined);
  }

  onOpen(k) {
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
    // A stream subscribed in its URL; its `ready` event is the ack.
    if (!this.sse) this.send(k, subscribeFrame(channelName(this.channelOf(k))));
  }

  onFail(k, reason) {
    this.state[k] = FAILED;
    this.handshaking--;
    this.pending.delete(k);
    this.failed[reason] = (this.failed[reason] ?? 0) + 1;
  }

  onClose(k, code) {
    this.counts.open--;
    if (!this.closing) this.dropped[code] = (this.dropped[code] ?? 0) + 1;
    this.pending.delete(k);
    this.state[k] = CLOSED;
  }

  onText(k, buf) {
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
      this.failHandshake(k, 'ETIMEDOUT');
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
      this.send(k, publishFrame(channelName(this.channelOf(k)), data));
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

  /**
   * Closes every connection with the closing handshake, so the server closes
   * TCP first and the TIME_WAIT entries stay on its side, not on the source
   * ports the next run needs.
   */
  async closeAll(timeout) {
    this.phase = Phase.CLOSING;
    this.closing = true;
    this.stopTimers();
    for (let k = 0; k < this.plan.count; k++) {
      if (this.state[k] === CONNECTING) this.failHandshake(k, 'closed during handshake');
      else if (this.sockets[k] !== undefined) this.close(k, NORMAL_CLOSURE);
    }
    await until(() => this.counts.open === 0, timeout);
    for (let k = 0; k < this.plan.count; k++) this.destroy(k);
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
