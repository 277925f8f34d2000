// The worker's part of presence (README, "Presence and join/leave"): it
// tells the primary when a connection's subscription to a channel of a
// `presence` or `joinLeave` namespace goes live and when it ends (the engine
// keeps the entries: lib/engines/index.js), delivers the join and leave
// frames to the channel's live subscribers here, and asks the engine for
// presence answers. Channels of other namespaces cost nothing: whether a
// channel is watched is decided once, when its local record is made
// (./subscriptions.js).
//
// A client's own join is not echoed to it (nor its leave: it is no longer
// subscribed): the subscribe's ack is its join, and a client skips itself by
// its connectionId.
//
// To the primary:   ['pjoin', channel, client, user|null, fields]
//                   ['pleave', channel, client]
//                   ['pres', channel, stats, token]  -> ['presd', token, answer]
// From the primary: ['jl', channel, client, frame]   a join or leave frame
import { Op } from '../ipc.js';
import { GatewayError } from '../errors.js';
import { kindOf } from '../engines/join-leave.js';
import { TRANSPORTS, kTransport } from './transport.js';
import { identityOf, kClient } from './identity.js';
import { metrics } from './metrics.js';

export class WorkerPresence {
  /**
   * @param {object} options
   * @param {import('./relay.js').WorkerRelay} options.relay
   * @param {import('./subscriptions.js').Subscriptions} options.subscriptions
   * @param {import('../namespaces.js').Namespaces} options.namespaces
   * @param {number} options.maxBuffered
   */
  constructor({ relay, subscriptions, namespaces, maxBuffered }) {
    this.relay = relay;
    this.subscriptions = subscriptions;
    this.namespaces = namespaces;
    this.maxBuffered = maxBuffered;
    this.encoded = new Array(TRANSPORTS.length); // per transport, the held frames' encodings
    this.held = new Map(); // channel -> [client, frame, ...] to write at the end of the turn
    this.flush = this.flush.bind(this);
    subscriptions.watch(this);
    relay.answers(Op.PRESENCE_DONE);
    relay.handle(Op.JOIN_LEAVE, ([, channel, client, frame]) => this.deliver(channel, client, frame));
  }

  /** Whether the channel's subscribers are told to the engine. */
  watched(channel) {
    const ns = this.namespaces.lookup(channel);
    return ns !== undefined && (ns.presence || ns.joinLeave);
  }

  /** A connection's subscription went live. */
  joined(conn, channel) {
    const { user, shown } = identityOf(conn);
    this.relay.send([Op.PRESENCE_JOIN, channel, conn[kClient], user, shown]);
  }

  /** A live subscription ended (unsubscribed, or the connection closed). */
  left(conn, channel) {
    this.relay.send([Op.PRESENCE_LEAVE, channel, conn[kClient]]);
  }

  /**
   * A join or leave frame: held to the end of the turn, so a burst (a
   * reconnect storm's hundred frames in one batch from the primary) costs
   * each subscriber one write, not one per frame.
   */
  deliver(channel, client, frame) {
    let held = this.held.get(channel);
    if (held === undefined) {
      if (this.held.size === 0) setImmediate(this.flush);
      this.held.set(channel, (held = []));
    }
    held.push(client, frame);
  }

  flush() {
    for (const [channel, held] of this.held) this.write(channel, held);
    this.held.clear();
  }

  /** Every live subscriber here gets the channel's held frames in one write, less those about itself. */
  write(channel, held) {
    const subscribers = this.subscriptions.subscribers(channel);
    if (subscribers === undefined) return;
    const about = new Set();
    for (let i = 0; i < held.length; i += 2) about.add(held[i]);
    const { encoded, maxBuffered } = this;
    encoded.fill(undefined);
    let sent = 0;
    for (const conn of subscribers) {
      const transport = conn[kTransport];
      const batch = (encoded[transport.index] ??= encodeEach(transport, held));
      const own = about.has(conn[kClient]);
      const bytes = own ? Buffer.concat(batch.frames.filter((f, i) => held[2 * i] !== conn[kClient])) : batch.all;
      if (bytes.length > 0 && transport.write(conn, bytes, maxBuffered)) sent += own ? countOthers(held, conn[kClient]) : batch.frames.length;
    }
    if (sent > 0) metrics.joinLeaveSent.inc(sent);
  }

  /**
   * @param {string} channel of a presence namespace (lib/core/commands.js checks it)
   * @param {boolean} stats presence_stats rather than presence
   * @returns {Promise<{clients: string} | {clients: number, users: number}>} the engine's answer
   * @throws {GatewayError} too_many, unavailable
   */
  async read(channel, stats) {
    const answer = await this.relay.ask([Op.PRESENCE, channel, stats]);
    if (answer.error !== undefined) throw new GatewayError(answer.error, answer.message);
    return answer;
  }
}

/** @returns {{frames: Buffer[], all: Buffer}} each held frame as the transport writes it, and all of them in one buffer */
function encodeEach(transport, held) {
  const frames = [];
  for (let i = 0; i < held.length; i += 2) frames.push(transport.encodeEvent(kindOf(held[i + 1]), held[i + 1]));
  return { frames, all: Buffer.concat(frames) };
}

function countOthers(held, client) {
  let n = 0;
  for (let i = 0; i < held.length; i += 2) if (held[i] !== client) n++;
  return n;
}
