// This worker's part of the calls on the whole cluster (Call in ../ipc.js;
// the primary runs them: lib/primary/calls.js): POST /disconnect and the
// server API's subscribe, unsubscribe and channels. A user's connections are
// reached through the user index (./users.js, under --auth jwt or hook); a
// transport whose channels are fixed (an SSE stream's are its URL's) is not
// subscribed or unsubscribed by the server.
//
// From the primary: [Op.RUN, token, name, args] -> this worker's part
// To the primary:   [Op.CALL, token, name, args] -> the cluster's value
import { Call, MAX_CHANNELS, Op } from '../core/ipc.js';
import { kTransport } from '../core/symbols.js';

/**
 * @param {object} options
 * @param {import('../worker/relay.js').WorkerRelay} options.relay
 * @param {import('./users.js').WorkerUsers} [options.users] under --auth jwt or hook
 * @param {import('../native/connections.js').Connections} options.connections
 * @param {import('./subscriptions.js').Subscriptions} options.subscriptions
 */
export function attachCalls({ relay, users, connections, subscriptions }) {
  relay.answers(Op.RUN, run);

  function run(name, args) {
    switch (name) {
      case Call.KICK:
        return users?.closeHere(args.user, args.code, args.reason) ?? 0;
      case Call.SUBSCRIBE:
        return count(args.user, (conn) => connections.serverSubscribe(conn, args.channel));
      case Call.UNSUBSCRIBE:
        return count(args.user, (conn) => connections.serverUnsubscribe(conn, args.channel));
      case Call.CHANNELS:
        return subscriptions.counts(args.prefix, MAX_CHANNELS);
      case Call.CLOSE_SUBSCRIBERS:
        return closeSubscribers(args.channel, args.code, args.reason);
      default:
        throw new TypeError(`unknown cluster call ${JSON.stringify(name)}`);
    }
  }

  /** How many of the user's connections here `act` applied to. */
  function count(user, act) {
    let n = 0;
    for (const conn of users?.connectionsOf(user) ?? []) if (!conn[kTransport].channelsFixed && act(conn)) n++;
    return n;
  }

  /** Closes every live subscriber of `channel` here, as its way in closes (its transport's close). */
  function closeSubscribers(channel, code, reason) {
    const subscribers = [...(subscriptions.local(channel) ?? [])];
    for (const conn of subscribers) conn[kTransport].close(conn, code, reason);
    return subscribers.length;
  }
}
