// The worker's part of presence (DESIGN.md "Presence and join/leave"): it
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
import { ErrorCode, ProtocolError } from '../protocol.js';
import { kindOf } from '../engines/join-leave.js';
import { TRANSPORTS, identityOf, kClient, kTransport } from './transport.js';
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
    this.encoded = new Array(TRANSPORTS.length);
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
    const { user, fields } = identityOf(conn);
    this.relay.batch.push([Op.PRESENCE_JOIN, channel, conn[kClient], user, fields]);
  }

  /** A live subscription ended (unsubscribed, or the connection closed). */
  left(conn, channel) {
    this.relay.batch.push([Op.PRESENCE_LEAVE, channel, conn[kClient]]);
  }

  /** A join or leave frame: to every live subscriber here but the client it is about. */
  deliver(channel, client, frame) {
    const subscribers = this.subscriptions.subscribers(channel);
    if (subscribers === undefined) return;
    const kind = kindOf(frame);
    const { encoded, maxBuffered } = this;
    encoded.fill(undefined);
    let sent = 0;
    for (const conn of subscribers) {
      if (conn[kClient] === client) continue;
      const transport = conn[kTransport];
      if (transport.write(conn, (encoded[transport.index] ??= transport.encodeEvent(kind, frame)), maxBuffered)) sent++;
    }
    if (sent > 0) metrics.joinLeaveSent.inc(sent);
  }

  /**
   * @param {string} channel checked with presenceProblem() first
   * @param {boolean} stats presence_stats rather than presence
   * @returns {Promise<{clients: string} | {clients: number, users: number}>} the engine's answer
   * @throws {ProtocolError} too_many, unavailable
   */
  async read(channel, stats) {
    const answer = await this.relay.ask([Op.PRESENCE, channel, stats]);
    if (answer.error !== undefined) throw new ProtocolError(answer.error, answer.message);
    return answer;
  }
}

/**
 * @param {import('../namespaces.js').Namespace} ns the channel's namespace
 * @returns {ProtocolError|undefined} why presence cannot be asked of the channel
 */
export function presenceProblem(ns, channel, id) {
  if (ns.presence) return undefined;
  const where = ns.name === '' ? 'channels outside namespaces' : `namespace ${ns.name}`;
  return new ProtocolError(ErrorCode.BAD_REQUEST, `no presence on ${channel}: ${where} lack presence: true`, id);
}
