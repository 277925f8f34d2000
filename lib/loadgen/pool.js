// The connections one agent process holds: it opens them at a paced rate,
// subscribes them, publishes from them and checks what they receive. The
// wire is SocketTable's; this class keeps the per-connection protocol state,
// in typed arrays indexed by connection (a few bytes each), and the figures.
import { performance } from 'node:perf_hooks';
import { SocketTable } from './sockets.js';
import { Histogram } from './histogram.js';
import { Pacer } from './pacer.js';
import { connectionTokens } from './tokens.js';
import { eventEpoch } from './sse-wire.js';
import { pusherControl, pusherSubscribeFrame, readPusherEvent } from './pusher-wire.js';
import { ablyControl, ablySubscribeFrame, readAblyMessage } from './ably-wire.js';
import { readMsgpack } from './msgpack-frames.js';
import {
  AUTH_ID,
  SUBSCRIBE_ID,
  PUBLISH_ID,
  RESUBSCRIBE_ID,
  nowUs,
  channelName,
  padding,
  dataJson,
  authFrame,
  subscribeFrame,
  resubscribeFrame,
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
const AUTHENTICATING = 7; // a WebSocket's auth frame sent, its ack awaited

// A connection dropped on purpose by a reconnect round: until its old
// socket is closed, then while it dials and resubscribes with since.
const DROPPED = 1;
const REDIALING = 2;
// A failed re-dial tries again after a random delay within a window that
// doubles per failure (200 ms, 400 ms, ... at most 3.2 s): about 15 s in all,
// the time a worker takes to be replaced several times over.
const MAX_REDIAL_FAILURES = 8;
const REDIAL_DELAY_MS = 200;
const MAX_REDIAL_DELAY_MS = 3200;
// Clients a server dropped come back spread over this (random), as the
// client library's backoff spreads them: all at once they would overflow the
// listen backlog and wait for SYN retries.
const RECONNECT_SPREAD_MS = 1000;

// What a connection says and reads, by protocol: Pusher's and Ably's are counted, their seqs not checked.
const NATIVE = { subscribeFrame, readMessage, control: parseFrame, sequenced: true };
const PUSHER = { subscribeFrame: pusherSubscribeFrame, readMessage: readPusherEvent, control: pusherControl, sequenced: false };
const ABLY = { subscribeFrame: ablySubscribeFrame, readMessage: readAblyMessage, control: ablyControl, sequenced: false };
const WIRES = { native: NATIVE, pusher: PUSHER, ably: ABLY };

const TICK_MS = 10;
const SWEEP_MS = 250;
const NORMAL_CLOSURE = 1000;
const MAX_PORT_RETRIES = 8;

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
   * @param {{low: number, spareFrom: number, spareSize: number}} [plan.ports] explicit source ports: g binds
   *   low + floor(g / addresses); a connection whose port is taken retries on this agent's spare ports
   * @param {number} plan.channels connection i subscribes to <channelPrefix><i mod channels> (0 = none)
   * @param {string} [plan.channelPrefix] c unless given
   * @param {number} plan.messageSize bytes of data per published message
   * @param {number} plan.reconnectEvery seconds between reconnect rounds once ramped (0: none)
   * @param {number} plan.reconnectFraction share of the connections each round drops
   * @param {'ws'|'sse'} plan.transport
   * @param {'native'|'pusher'|'ably'} [plan.protocol] native unless given
   * @param {'json'|'msgpack'} [plan.encoding] a WebSocket's
   * @param {boolean} [plan.delta] subscribe with "delta":"fossil"
   * @param {{token?: string, jwtSecret?: string, jwtSubPrefix: string}} plan.auth (./tokens.js)
   */
  constructor(plan) {
    super(plan.url, plan.count, plan.transport, plan.encoding);
    this.plan = plan;
    const n = plan.count;
    this.state = new Uint8Array(n);
    this.startedAt = new Float64Array(n); // ms (performance.now) when the handshake or subscribe began
    this.lastSeq = new Float64Array(n);
    this.redialing = new Uint8Array(n); // DROPPED, REDIALING, or 0
    this.redialFailures = new Uint8Array(n);
    this.replayedUntil = new Float64Array(n); // the last seq a recovery replayed: no latency for those
    // Each connection's epoch, from its acks (one string per epoch, shared):
    // a recovery asks within the epoch its seq belongs to.
    this.epochOf = new Array(n);
    this.epochNames = new Map();
    this.gapped = new Set(); // streams re-dialling that were told `event: gap`
    this.reconnectCursor = 0;
    this.pending = new Set(); // slots with a handshake or subscribe in flight
    this.phase = Phase.RAMPING;
    this.next = 0;
    this.handshaking = 0;
    this.closing = false;
    this.parsed = { seq: 0, sentUs: 0 };

    this.counts = {
      attempted: 0,
      opened: 0,
      open: 0,
      peakOpen: 0,
      subscribed: 0,
      received: 0,
      outOfOrder: 0,
      gaps: 0,
      reconnects: 0,
      recovered: 0,
      unrecoverable: 0,
      epochChanged: 0, // of the unrecoverable: answered in another epoch (the channel's state was lost)
      seqRestarts: 0 // a live message back at seq 1: the channel's sequence started over in a new epoch
    };
    this.failed = {};
    this.dropped = {};
    this.subscribeErrors = {};
    this.handshakeUs = new Histogram();
    this.latencyUs = new Histogram();
    this.reconnectUs = new Histogram(); // from a drop to the resubscribe's answer
    this.droppedAt = undefined; // ms (performance.now) of each connection's drop, once reconnects happen
    this.subscribers = new Float64Array(plan.channels);
    this.firstAttemptAt = 0;
    this.lastOpenAt = 0;
    // When 90 % of this pool's connections were open: the ramp's tail is the rest.
    this.opened90 = Math.ceil(0.9 * n);
    this.portRetries = plan.ports === undefined ? undefined : new Uint8Array(n);
    this.nextSpare = 0;
    this.at90 = 0;

    this.publisher = { sent: 0, acked: 0, errors: {}, errorCount: 0, perChannel: new Float64Array(plan.channels), cursor: 0, counter: 0 };
    this.pad = padding(plan.messageSize);
    this.wire = WIRES[plan.protocol ?? 'native'];
  }

  /** Opens the connections; resolves once every one is open or failed, and subscribed or not. */
  async ramp() {
    this.tokens = await connectionTokens(this.plan.auth, this.plan.first, this.plan.count);
    this.firstAttemptAt = wallMs();
    const bucket = new Pacer(this.plan.rate);
    this.sweepTimer = setInterval(() => this.sweep(), SWEEP_MS);
    return new Promise((resolve) => {
      this.rampTimer = setInterval(() => {
        const room = Math.min(this.plan.maxHandshakes - this.handshaking, this.plan.count - this.next);
        for (let n = room > 0 ? bucket.take(room) : 0; n > 0; n--) this.open(this.next++);
        if (this.next === this.plan.count && this.pending.size === 0) {
          this.stopTimers();
          this.phase = Phase.RAMPED;
          if (this.plan.reconnectEvery > 0) {
            this.sweepTimer = setInterval(() => this.sweep(), SWEEP_MS);
            this.reconnectTimer = setInterval(() => this.reconnectRound(), this.plan.reconnectEvery * 1000);
          }
          resolve();
        }
      }, TICK_MS);
    });
  }

  stopTimers() {
    clearInterval(this.rampTimer);
    clearInterval(this.sweepTimer);
    clearInterval(this.publishTimer);
    clearInterval(this.reconnectTimer);
  }

  open(k) {
    const g = this.plan.first + k;
    const { addresses } = this.plan;
    this.state[k] = CONNECTING;
    this.startedAt[k] = performance.now();
    this.pending.add(k);
    this.handshaking++;
    this.counts.attempted++;
    if (addresses.length === 0) return this.connect(k, undefined, undefined);
    const port = this.plan.ports === undefined ? undefined : this.plan.ports.low + Math.floor(g / addresses.length);
    this.connect(k, addresses[g % addresses.length], port);
  }

  /**
   * The planned source port is taken on that address (a listener, another
   * program's connection, a leftover of an earlier run): the connection
   * retries on the agent's next spare port, a few times at most.
   * @returns {boolean} whether it retries
   */
  onPortTaken(k) {
    const { addresses, ports } = this.plan;
    if (ports === undefined || ports.spareSize === 0 || this.portRetries[k] >= MAX_PORT_RETRIES) return false;
    this.portRetries[k]++;
    const port = ports.spareFrom + (this.nextSpare++ % ports.spareSize);
    this.connect(k, addresses[(this.plan.first + k) % addresses.length], port);
    return true;
  }

  onOpen(k) {
    const now = performance.now();
    this.handshaking--;
    const c = this.counts;
    if (++c.open > c.peakOpen) c.peakOpen = c.open;
    if (this.redialing[k] !== REDIALING) {
      this.handshakeUs.record((now - this.startedAt[k]) * 1000);
      c.opened++;
      this.lastOpenAt = wallMs();
      if (c.opened === this.opened90) this.at90 = this.lastOpenAt;
    }
    this.startedAt[k] = now;
    // A stream's token was in its URL; a WebSocket authenticates before anything else.
    if (this.tokens === undefined || this.sse) return this.join(k);
    this.state[k] = AUTHENTICATING;
    this.send(k, authFrame(this.tokens[k]));
  }

  /**
   * Subscribes, or after a re-dial resubscribes with since. A stream
   * subscribed in its URL (with Last-Event-ID after a re-dial); its `ready`
   * event is the ack.
   */
  join(k) {
    if (this.plan.channels === 0) {
      this.state[k] = OPEN;
      this.redialing[k] = 0;
      this.pending.delete(k);
      return;
    }
    this.state[k] = SUBSCRIBING;
    if (this.sse) return;
    const channel = this.channelNameOf(k);
    this.send(k, this.redialing[k] === REDIALING ? resubscribeFrame(channel, this.lastSeq[k], this.epochOf[k], this.plan.delta) : this.wire.subscribeFrame(channel, this.plan.delta));
  }

  onFail(k, reason) {
    this.handshaking--;
    // A re-dial that failed (it reached a worker as it died) tries again
    // after a growing random delay, as a client's backoff would.
    if (this.redialing[k] === REDIALING && !this.closing && this.redialFailures[k] < MAX_REDIAL_FAILURES) {
      const window = Math.min(MAX_REDIAL_DELAY_MS, REDIAL_DELAY_MS * 2 ** this.redialFailures[k]++);
      this.redialAfter(k, window);
      return;
    }
    this.state[k] = FAILED;
    this.pending.delete(k);
    this.failed[reason] = (this.failed[reason] ?? 0) + 1;
  }

  onClose(k, code) {
    this.counts.open--;
    if (this.redialing[k] === DROPPED) return this.redial(k);
    if (!this.closing) this.dropped[code] = (this.dropped[code] ?? 0) + 1;
    const midRedial = this.redialing[k] === REDIALING;
    const held = this.state[k] === SUBSCRIBED || this.state[k] === OPEN || midRedial;
    // Reconnecting as a real client would: a connection the server dropped
    // (its worker killed, a drain), even one still re-dialling, comes back and recovers too.
    if (held && this.phase === Phase.RAMPED && this.plan.reconnectEvery > 0 && !this.closing) {
      if (!midRedial) {
        this.counts.reconnects++;
        this.markDropped(k);
      }
      return this.redialAfter(k, RECONNECT_SPREAD_MS);
    }
    this.redialing[k] = 0;
    this.pending.delete(k);
    this.state[k] = CLOSED;
  }

  onText(k, buf) {
    const m = this.parsed;
    if (this.msgpack) {
      const frame = readMsgpack(buf, m);
      if (frame !== undefined) return this.control(k, frame);
    } else if (!this.wire.readMessage(buf, m)) return this.control(k, this.wire.control(buf));
    const c = this.counts;
    c.received++;
    // A stream's replay comes before its `ready`: no latency for it either.
    if (m.sentUs >= 0 && m.seq > this.replayedUntil[k] && this.state[k] === SUBSCRIBED) this.latencyUs.record(nowUs() - m.sentUs);
    if (!this.wire.sequenced) return;
    // The channel's seq is the order every subscriber must see: strictly consecutive.
    const last = this.lastSeq[k];
    if (last !== 0 && m.seq !== last + 1) {
      if (m.seq > last) c.gaps += m.seq - last - 1;
      else if (m.seq === 1) this.sequenceRestarted(k, buf);
      else c.outOfOrder++;
    }
    if (m.seq > last || m.seq === 1) this.lastSeq[k] = m.seq;
  }

  /**
   * The channel started over at seq 1 (its state was lost: a Redis that came
   * back empty). A WebSocket message carries no epoch, so the connection keeps
   * the old one, as a client does: its next recovery is answered in another
   * epoch. A stream's event id carries the new one, as EventSource keeps it.
   */
  sequenceRestarted(k, event) {
    this.counts.seqRestarts++;
    this.replayedUntil[k] = 0;
    if (this.sse) this.setEpoch(k, eventEpoch(event));
  }

  /** Acks and errors: their id says whether they answer a subscribe or a publish. */
  control(k, frame) {
    if (frame.id === AUTH_ID && this.state[k] === AUTHENTICATING) {
      if (frame.type === 'ack') return this.join(k);
      this.redialing[k] = 0;
      this.subscribeFailed(k, `auth ${frame.code}`);
    } else if (frame.type === 'ack' && frame.id === SUBSCRIBE_ID && this.state[k] === SUBSCRIBING) {
      this.subscribed(k, frame);
    } else if (frame.type === 'ready' && this.state[k] === SUBSCRIBING) {
      this.streamReady(k, frame);
    } else if (frame.type === 'gap') {
      this.gapped.add(k);
    } else if (frame.id === RESUBSCRIBE_ID && this.state[k] === SUBSCRIBING) {
      this.resubscribed(k, frame);
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

  /** The ack of a first subscribe, or a first stream's `ready`. */
  subscribed(k, frame) {
    this.state[k] = SUBSCRIBED;
    this.pending.delete(k);
    this.subscribers[this.channelOf(k)]++;
    this.setEpoch(k, frame.epoch);
    // Where the channel stood: what follows is what this connection must see,
    // and where it resumes from if it is dropped before its first message.
    if (Number.isSafeInteger(frame.seq)) this.lastSeq[k] = frame.seq;
    this.counts.subscribed++;
  }

  /**
   * A stream's `ready`. After a re-dial with Last-Event-ID it answers the
   * recovery as a resubscribe's ack does, but the replay came before it: it
   * recovered unless the gateway sent `event: gap` or another epoch.
   */
  streamReady(k, frame) {
    if (this.redialing[k] !== REDIALING) return this.subscribed(k, frame);
    const recovered = !this.gapped.delete(k) && frame.epoch === this.epochOf[k];
    if (recovered && this.lastSeq[k] < frame.seq) this.counts.gaps += frame.seq - this.lastSeq[k]; // a short replay
    this.resubscribed(k, { type: 'ack', recovered, seq: frame.seq, epoch: frame.epoch });
    this.lastSeq[k] = frame.seq;
  }

  setEpoch(k, epoch) {
    if (!this.epochNames.has(epoch)) this.epochNames.set(epoch, epoch);
    this.epochOf[k] = this.epochNames.get(epoch);
  }

  /** Where a re-dialling stream resumes from: its last event's id. */
  lastEventId(k) {
    return this.redialing[k] === REDIALING && this.epochOf[k] !== undefined ? `${this.lastSeq[k]}.${this.epochOf[k]}` : undefined;
  }

  subscribeFailed(k, reason) {
    this.state[k] = OPEN;
    this.pending.delete(k);
    this.subscribeErrors[reason] = (this.subscribeErrors[reason] ?? 0) + 1;
  }

  /**
   * A reconnect round: drops the next share of the connections at once, as a
   * network would (no closing handshake); each re-dials as soon as its old
   * socket is closed and resubscribes with since.
   */
  reconnectRound() {
    const n = this.plan.count;
    let left = Math.max(1, Math.round(n * this.plan.reconnectFraction));
    for (let tries = 0; tries < n && left > 0; tries++) {
      const k = this.reconnectCursor;
      this.reconnectCursor = (k + 1) % n;
      if ((this.state[k] !== SUBSCRIBED && this.state[k] !== OPEN) || this.redialing[k] !== 0) continue;
      this.redialing[k] = DROPPED;
      this.counts.reconnects++;
      this.markDropped(k);
      this.destroy(k);
      left--;
    }
  }

  markDropped(k) {
    this.droppedAt ??= new Float64Array(this.plan.count);
    this.droppedAt[k] = performance.now();
  }

  /** Re-dials after a random delay within `windowMs`. */
  redialAfter(k, windowMs) {
    this.redialing[k] = REDIALING;
    this.state[k] = CONNECTING;
    this.pending.add(k);
    setTimeout(() => !this.closing && this.redial(k), Math.random() * windowMs);
  }

  redial(k) {
    const { addresses } = this.plan;
    this.redialing[k] = REDIALING;
    this.state[k] = CONNECTING;
    this.startedAt[k] = performance.now();
    this.pending.add(k);
    this.gapped.delete(k); // a gap told to a stream that closed before its `ready`
    this.handshaking++;
    // The kernel picks the port: the planned one may still be in TIME_WAIT.
    this.connect(k, addresses.length === 0 ? undefined : addresses[(this.plan.first + k) % addresses.length], undefined);
  }

  /** The answer to a resubscribe: the missed messages follow a recovered ack. */
  resubscribed(k, frame) {
    this.redialing[k] = 0;
    this.redialFailures[k] = 0;
    this.reconnectUs.record((performance.now() - this.droppedAt[k]) * 1000);
    if (frame.type === 'error') {
      this.counts.unrecoverable++;
      return this.subscribeFailed(k, frame.code);
    }
    this.state[k] = SUBSCRIBED;
    this.pending.delete(k);
    if (frame.recovered === true) {
      this.counts.recovered++;
      this.replayedUntil[k] = frame.seq;
    } else {
      // Missed for good: resume from the ack, and the report shows them as lost.
      this.counts.unrecoverable++;
      if (frame.epoch !== this.epochOf[k]) this.counts.epochChanged++;
      this.lastSeq[k] = frame.seq;
    }
    this.setEpoch(k, frame.epoch);
  }

  /** Fails handshakes and subscribes that have taken longer than the timeout. */
  sweep() {
    const limit = performance.now() - this.plan.handshakeTimeout;
    for (const k of this.pending) {
      if (this.startedAt[k] > limit) continue;
      if (this.state[k] === SUBSCRIBING || this.state[k] === AUTHENTICATING) {
        this.subscribeFailed(k, 'timeout');
        continue;
      }
      this.failHandshake(k, 'ETIMEDOUT');
    }
  }

  /** Starts publishing `rate` messages/s in all, round-robin over the subscribed connections. */
  startPublishing(rate) {
    const bucket = new Pacer(rate);
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
      this.send(k, publishFrame(this.channelNameOf(k), data));
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
    this.stopTimers();
    // Re-dials under way finish first: they are not failures of the ramp.
    await until(() => !this.redialing.some((r) => r !== 0), timeout);
    this.phase = Phase.CLOSING;
    this.closing = true;
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

  channelNameOf(k) {
    return channelName(this.plan.channelPrefix ?? 'c', this.channelOf(k));
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
      handshaking: this.handshaking,
      firstAttemptAt: this.firstAttemptAt,
      lastOpenAt: this.lastOpenAt,
      opened90: this.at90 > 0 ? this.opened90 : 0,
      at90: this.at90,
      latencyUs: this.latencyUs
    };
  }

  /** Everything, for the final report. */
  final() {
    return { ...this.status(), handshakeUs: this.handshakeUs, reconnectUs: this.reconnectUs };
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
