// This worker's part of the calls on the whole cluster (Call in ../ipc.js;
// the primary runs them: lib/primary/calls.js): POST /disconnect and the
// server API's subscribe, unsubscribe and channels. A user's connections are
// reached through the user index (./users.js, under --auth jwt or hook); a
// transport whose channels are fixed (an SSE stream's are its URL's) is not
// subscribed or unsubscribed by the server.
//
// The server API's subscribe is answered once the joins it started have
// ended (with Redis, once this node is subscribed to the channel), so a
// publish the backend makes after the answer reaches those connections;
// a join still under way after SUBSCRIBE_WAIT_MS is counted and goes on.
//
// From the primary: [Op.RUN, token, name, args] -> this worker's part
// To the primary:   [Op.CALL, token, name, args] -> the cluster's value
import { Call, MAX_CHANNELS, Op } from '../core/ipc.js';
import { kTransport } from '../core/symbols.js';

// Within the time a node waits for another's answer (lib/engines/redis/calls.js: 2 s).
const SUBSCRIBE_WAIT_MS = 1500;

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
        return subscribe(args.user, args.channel);
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

  /** How many of the user's connections here the server subscribed, once their joins have ended (or SUBSCRIBE_WAIT_MS). */
  async function subscribe(user, channel) {
    const joins = [];
    const subscribed = count(user, (conn) => {
      const { promise, resolve } = Promise.withResolvers();
      joins.push(promise);
      return connections.serverSubscribe(conn, channel, undefined, resolve);
    });
    if (joins.length === 0) return subscribed;
    let timer;
    await Promise.race([Promise.all(joins), new Promise((resolve) => (timer = setTimeout(resolve, SUBSCRIBE_WAIT_MS)))]);
    clearTimeout(timer);
    return subscribed;
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
