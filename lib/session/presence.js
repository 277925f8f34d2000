// The worker's part of presence (README, "Presence and join/leave"): it
// tells the primary when a connection's subscription to a channel of a
// `presence` or `joinLeave` namespace goes live and when it ends (the engine
// keeps the entries: lib/engines/index.js), delivers the channel's
// presence_diff frames to its live subscribers here, and asks the engine for
// presence answers. Channels of other namespaces cost nothing: whether a
// channel is watched is decided once, when its local record is made
// (./subscriptions.js).
//
// To the primary:   ['pjoin', channel, client, member]
//                   ['pleave', channel, client]
//                   ['pres', channel, stats, token]  -> ['presd', token, answer]
//                   ['psub', token, channel, client, member, maxUsers] -> a subscribe reply with the members
// From the primary: ['pdiff', channel, joinsJson, leavesJson]   who came and went
//
// A member is a value ({user, info}: lib/core/identity.js) from the
// connection to the engine and back; a diff's members come as the JSON the
// primary encoded once (../engines/join-leave.js), and its frame is encoded
// here, once per transport, for every subscriber on this worker.
import { Op } from '../core/ipc.js';
import { TRANSPORTS } from '../transport/transport.js';
import { kSession, kTransport } from '../core/symbols.js';
import { identityOf } from '../core/identity.js';
import { presenceDiffFrame } from '../protocol/frames.js';
import { metrics } from './metrics.js';

// Diff bytes one turn writes before the rest waits for the next. A write
// also costs the kernel the receiving side (over loopback, this machine), so
// the bound is what keeps a storm's turns short: the same diffs go out,
// spread over more turns (bench:presence measures the worst turn).
const TURN_BYTES = 2 ** 20;

export class WorkerPresence {
  /**
   * @param {object} options
   * @param {import('../worker/relay.js').WorkerRelay} options.relay
   * @param {import('./subscriptions.js').Subscriptions} options.subscriptions
   * @param {import('../core/namespaces.js').Namespaces} options.namespaces
   * @param {number} options.maxBuffered
   */
  constructor({ relay, subscriptions, namespaces, maxBuffered }) {
    this.relay = relay;
    this.subscriptions = subscriptions;
    this.namespaces = namespaces;
    this.maxBuffered = maxBuffered;
    this.diffs = []; // {frame, subscribers (an iterator), encoded (per transport)}: the diffs being written, in order
    this.writeDiffs = this.writeDiffs.bind(this);
    subscriptions.watch(this);
    relay.handle(Op.PRESENCE_DIFF, ([, channel, joinsJson, leavesJson]) => this.deliver(channel, joinsJson, leavesJson));
  }

  /** Whether the channel's subscribers are told to the engine. */
  watched(channel) {
    const ns = this.namespaces.lookup(channel);
    return ns !== undefined && (ns.presence || ns.joinLeave);
  }

  /** A connection's subscription went live. */
  joined(conn, channel) {
    this.relay.send([Op.PRESENCE_JOIN, channel, conn[kSession].id, identityOf(conn).member]);
  }

  /**
   * What admits the connection's user to a channel holding at most
   * `maxUsers` users, checked and added in one step where the entries live,
   * so concurrent joins on any worker or node cannot pass the cap together:
   * a join request's `presence` (./sessions.js, ../worker/relay.js).
   * @param {import('../core/identity.js').Member} [member] who it is in this
   *   channel (a way in whose members are per channel); its identity's by default
   */
  member(conn, maxUsers, member = identityOf(conn).member) {
    return { client: conn[kSession].id, member, maxUsers };
  }

  /** A live subscription ended (unsubscribed, or the connection closed), or an admitted one will not go live. */
  left(conn, channel) {
    this.relay.send([Op.PRESENCE_LEAVE, channel, conn[kSession].id]);
  }

  /**
   * A channel's presence_diff: encoded once per transport and written to
   * every live subscriber here, the clients it names among them (a
   * subscriber that read presence before its own join was folded in finds
   * itself in a later diff). In a storm a diff may name thousands of clients
   * and go to thousands of subscribers: past TURN_BYTES written in a turn,
   * the rest waits for the next one, so the worker keeps serving meanwhile;
   * diffs go out in the order they came, so each subscriber gets a channel's
   * diffs in order.
   */
  deliver(channel, joinsJson, leavesJson) {
    const subscribers = this.subscriptions.local(channel);
    if (subscribers === undefined) return;
    const frame = presenceDiffFrame(channel, joinsJson, leavesJson);
    this.diffs.push({ frame, subscribers: subscribers.values(), encoded: new Array(TRANSPORTS.length) });
    if (this.diffs.length === 1) this.writeDiffs();
  }

  writeDiffs() {
    let budget = TURN_BYTES;
    let sent = 0;
    while (this.diffs.length > 0 && budget > 0) {
      const { frame, subscribers, encoded } = this.diffs[0];
      for (let next = subscribers.next(); !next.done; next = subscribers.next()) {
        const conn = next.value;
        const transport = conn[kTransport];
        const bytes = (encoded[transport.index] ??= transport.encodeEvent('presence_diff', frame));
        if (transport.write(conn, bytes, this.maxBuffered)) sent++;
        budget -= bytes.length;
        if (budget <= 0) break;
      }
      if (budget > 0) this.diffs.shift();
    }
    if (sent > 0) metrics.presenceDiffsSent.inc(sent);
    if (this.diffs.length > 0) setImmediate(this.writeDiffs);
  }

  /**
   * @param {string} channel of a presence namespace (lib/core/commands.js checks it)
   * @param {boolean} stats presence_stats rather than presence
   * @returns {Promise<{clients: Object<string, import('../core/identity.js').Member>} | {clients: number, users: number, digest: number}>} the engine's answer
   * @throws {import('../core/errors.js').GatewayError} too_many, unavailable
   */
  read(channel, stats) {
    return this.relay.ask(Op.PRESENCE, channel, stats);
  }
}

