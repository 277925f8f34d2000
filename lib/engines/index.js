// The engines: what numbers each channel's publishes, keeps its history and
// delivers its messages to the workers that hold subscribers. The relay
// (lib/primary/relay.js) talks to every engine through the one interface
// below, never asking which it has. `--engine` picks one from `engines`.
//
// The rules every engine keeps (each engine's header says how):
// - Seq: a channel's publishes are numbered 1, 2, 3, ... within its epoch, one
//   order for every route; no seq is given twice or skipped.
// - Epoch: a string drawn when a channel's sequence starts; a sequence that
//   starts over (its state lost or forgotten) has a new one, so a client's
//   (seq, epoch) never points into another sequence.
// - History and recovery: the history is read through subscribe's `since`,
//   and recovery is exact or refused (./subscribe-reply.js): every message
//   after since.seq up to the channel's seq, in order; or none, with
//   `epoch_changed` or `too_old`.
// - Ordering: a route gets a channel's messages in seq order, and a
//   subscribe's answer at its place among them: every message after the
//   answer is newer than it, every one before older, so the replay and the
//   live messages join with no gap and no overlap.
//
// A route is anything with `push(op)` (a worker's IpcBatch, lib/core/ipc.js).
// Engines send it [Op.MSG, channel, seq, dataJson, exclude?], and [Op.EPOCH,
// channel, epoch] when a routed channel's sequence starts over.

/**
 * @typedef {{push: (op: any[]) => void}} Route
 * @typedef {{seq: number, epoch: string}} Position
 * @typedef {{epoch: string, seq: number, result?: string, replay?: string[]}} SubscribeReply
 *   where the channel stands; with `since`, a Recovery result (lib/protocol/outcomes.js)
 *   and, when recovered, the data missed
 */

/**
 * @typedef {{since?: Position, limit?: number, reverse?: boolean}} HistoryQuery
 * @typedef {{epoch: string, seq: number, messages: Array<{seq: number, data: string}>} | import('../core/errors.js').GatewayError} HistoryAnswer
 *   `data` serialised; an error with an ErrorCode (lib/core/errors.js): ./history-read.js says which
 *
 * @typedef {object} Instruments
 * @property {(seconds: number, count: number) => void} published `count`
 *   publishes were stored, `seconds` after they left for the store
 * @property {() => void} failedOver the engine now publishes to another master
 */

/**
 * What every engine is: the small interfaces below, as centrifuge's Broker
 * and PresenceManager are beside each other, held by one object per process
 * (the relay and the wiring take each part from it).
 *
 * Namespaces (lib/core/namespaces.js): a channel's history size and TTL, and
 * whether a subscribe without `since` also gets the latest message (a
 * `latest` namespace: the answer's replay holds it), are its namespace's.
 * idempotencyKey and version are kept by the engine, so that every route to
 * it, every node under a shared engine, gives one answer (./idempotency.js).
 * @typedef {Broker & History & Occupancy & Lifecycle & ClusterPart & {presence: Presence, onMember: (listener: MemberListener) => void}} Engine
 *   `onMember` is the webhooks' seam: presence.onMember, on the engine itself
 */

/**
 * The broker: numbers each channel's publishes and sends them to its routes.
 * @typedef {object} Broker
 * @property {boolean} available whether a publish can succeed now; the relay
 *   polls it and has the workers refuse publishes while it is false
 * @property {boolean} congested too many publishes waiting: the workers hold off
 * @property {boolean} [steady] true when `available` and `congested` change
 *   only with the traffic the relay passes it: the relay then polls them only
 *   while there is traffic, not for ever
 * @property {(publication: import('../core/seams.js').Publication, reply?: import('./publication.js').PublishReply) => void} publish
 *   gives the message its channel's next seq and sends it to the channel's
 *   routes ([Op.MSG, channel, seq, data, exclude?]). The engine reads
 *   `publication` during the call and keeps none of it. `reply`, when given,
 *   is answered once (./publication.js): at once by an engine whose state is
 *   local, later by one that must ask elsewhere. With an `idempotencyKey`
 *   seen on the channel within its window, nothing is published and the
 *   result holds the first publish's seq and epoch with skipped 'duplicate';
 *   with a `version` not above the channel's last accepted one, where the
 *   channel stands with skipped 'stale'.
 * @property {(channel: string, route: Route, since: Position | undefined, answer: (reply: SubscribeReply) => void) => void} subscribe
 *   routes the channel to `route` and calls `answer` once, at its place
 *   among the route's messages (see Ordering)
 * @property {(channel: string, route: Route) => void} unsubscribe
 * @property {(route: Route) => void} detach a route that is gone (its worker
 *   died): off every channel, its presence entries out
 * @property {(instruments: Instruments) => void} instrument where the engine
 *   reports its figures: one that stores elsewhere its publishes' latency and
 *   its failovers; every engine its presence's dropped join/leave frames
 */

/**
 * The history, read by the server API (a subscribe's `since` reads it through the broker).
 * @typedef {object} History
 * @property {(channel: string, query: HistoryQuery, answer: (answer: HistoryAnswer) => void) => void} history
 *   the server API's read of a channel's history; creates no channel state
 *   that would outlive the history TTL
 */

/**
 * Occupancy, for the webhooks (lib/webhooks/).
 * @typedef {object} Occupancy
 * @property {(listener: (channel: string, occupied: boolean) => void) => void} onOccupancy
 *   calls `listener` when a channel gets its first subscriber in the whole
 *   cluster (occupied) and when it loses its last (vacated), once for the
 *   cluster. A channel's subscribers are its routes: every worker's (a
 *   worker that died is detached), every node's under a shared engine.
 * @property {Departures} departures the
 *   member grace's markers, where every node that may see the user come back
 *   reads them: the machine's own (./departures-memory.js), or Redis
 *   (./redis/departures.js)
 *
 * The member grace's markers (lib/webhooks/members.js says how they are used).
 * @typedef {object} Departures
 * @property {(channel: string, user: string, token: string, graceMs: number) => Promise<void>} depart
 * @property {(channel: string, user: string) => Promise<boolean>} arrive true: a departure was undone
 * @property {(channel: string, user: string, token: string) => Promise<boolean>} settle true: departure `token` stands
 */

/**
 * The engine's life in the process.
 * @typedef {object} Lifecycle
 * @property {(config: object) => void} configure takes the namespaces of a
 *   configuration read again (SIGHUP)
 * @property {() => {channels: number, historyBytes: number, idempotencyKeys: number, idempotencyDropped: number, presenceClients: number, presenceChannels: object[]}} figures
 *   for GET /stats and the metrics (presence: the entries this process
 *   holds, and its largest presence channels {channel, clients, users})
 * @property {() => void} stop
 */

/**
 * The optional parts an engine that several gateway nodes share has (below).
 * @typedef {object} ClusterPart
 * @property {Calls} [calls] the cluster-wide calls
 * @property {UserCounts} [users] the cluster-wide part, under --max-conns-per-user
 * @property {UserCounts} [appConnections] the cluster-wide part of each Pusher app's connection count
 * @property {{take: (appId: string, events: number, limit: number) => Promise<boolean>}} [appRates] the cluster-wide count of each Pusher app's backend events per second
 * @property {(listener: (channel: string) => void) => void} [onResubscribed] `listener(channel)` once a
 *   channel routed here is subscribed to the shared engine again after the subscriptions dropped (what
 *   the other nodes told this node meanwhile never arrived), its messages and members caught up
 * @property {(key: string, ms: number) => Promise<boolean>} [claimOnce] whether this node is the cluster's first to claim `key` within `ms` (alone on its machine, an engine leaves it out: always)
 */

/**
 * Presence, beside the engine as centrifuge's PresenceManager is beside its
 * Broker, for the channels of `presence` or `joinLeave` namespaces: the
 * workers say who entered and left (lib/session/presence.js, through
 * lib/primary/presence.js), the presence keeps the entries (memory:
 * ./presence-memory.js; redis: ./redis/presence.js) and sends the channel's
 * routes [Op.PRESENCE_DIFF, channel, joinsJson, leavesJson] in `joinLeave` namespaces, at
 * most one per channel per --join-leave-interval, folding who came and went
 * (./join-leave.js); a list() asked marks the channel's diff exact, so a
 * read plus the diffs after it is the truth. An entry is a client's member
 * ({user, info}: lib/core/identity.js), a value each way in encodes. Exact across workers; the engine's detach(route) takes
 * the route's clients out, in the next diff; under Redis a node's entries
 * expire --presence-ttl after its last refresh, and an expired entry is never
 * answered.
 * @typedef {object} Presence
 * @property {(channel: string, route: Route, client: string, member: Member) => void} join
 *   a client of `route` entered the channel (its subscription is live); a second join of the same client is ignored
 * @property {(channel: string, route: Route, client: string, member: Member, maxUsers: number, answer: (added: boolean) => void) => void} admit
 *   join() under a cap, checked and added in one step for the whole cluster: added unless the channel
 *   has `maxUsers` users and the client's user is not one of them
 * @property {(channel: string, client: string) => void} leave it unsubscribed or closed
 * @property {(channel: string, answer: (answer: {clients: Object<string, Member>} | import('../core/errors.js').GatewayError) => void) => void} list
 *   `clients`: {client: member}; past --presence-max-clients, error too_many
 * @property {(channel: string, answer: (answer: {clients: number, users: number, digest: number} | import('../core/errors.js').GatewayError) => void) => void} stats
 *   `users`: distinct users among the clients (anonymous clients, under --auth none, are not users);
 *   `digest`: the XOR of the clients' hashes (lib/protocol/presence-hash.js)
 * @property {(listener: MemberListener) => void} onMember
 * @property {() => Promise<void>} settled resolves once what was asked of the
 *   store so far is done (redis: its script calls answered), so a node that
 *   stops takes its clients out instead of leaving them to expire
 * @property {PresenceTable} table the entries this process holds (./presence-table.js): figures
 *
 * @typedef {import('./presence-table.js').PresenceTable} PresenceTable
 * @typedef {import('../core/identity.js').Member} Member
 *
 * @callback MemberListener the per-user view (Pusher's member_added and
 *   member_removed; the webhooks): called in the primary, once for the whole
 *   cluster, when a user's first client enters a channel (present true) and
 *   when its last one leaves (present false), a dead worker's and, under
 *   Redis, a crashed node's expired clients included. Memory: the primary's
 *   one table makes each transition once. Redis: ./redis/presence.lua counts
 *   a user's entries atomically and the node whose call made the 0 -> 1 or
 *   1 -> 0 change (or whose sweep removed the expired last entry) calls its
 *   listeners; a quiet refresh after Redis lost its data calls none.
 * @param {string} channel
 * @param {string} user
 * @param {boolean} present
 * @param {string} [client] the client whose entry or departure made the
 *   change (none for a crashed node's expired entries)
 * @param {Member} [member] an arrival's entry: the user's info
 */

/**
 * The optional cluster-wide part: an engine that several gateway nodes share
 * (redis) reaches the users' connections on the other nodes. An engine alone
 * on its machine (memory) leaves it out, and lib/primary/users.js counts and
 * lib/primary/calls.js reaches this node only.
 *
 * Cluster calls (Call in lib/core/ipc.js: POST /disconnect, the server API's
 * subscribe, unsubscribe, channels and info) on the other nodes.
 * @typedef {object} Calls
 * @property {(name: string, args: any[]) => Promise<any[]>} call runs the
 *   call on the other nodes: each one's value (a node that does not answer
 *   in time is left out)
 * @property {(here: (name: string, args: any[]) => Promise<any>) => void} serve
 *   how this node runs the other nodes' calls
 * @property {() => Promise<void>} leave this node goes (a graceful stop): the
 *   others stop waiting for its answers
 *
 * --max-conns-per-user summed over the nodes.
 * @typedef {object} UserCounts
 * @property {(counts: Map<string, number>) => void} attach this node's counts
 *   per user, shared from now on
 * @property {(user: string, count: number) => Promise<boolean>} admit whether
 *   `count` here (the new connection included) and the other nodes' stay
 *   within the cap
 * @property {(user: string, count: number) => void} mirror this node's count changed
 */

/**
 * --engine's choices, name -> loader of the engine's class: only the chosen
 * one is loaded (the Redis one brings ioredis, ~22 MB).
 */
export const engines = Object.freeze({
  memory: async () => (await import('./memory.js')).MemoryEngine,
  redis: async () => (await import('./redis.js')).RedisEngine
});

/**
 * The --engine the configuration names, given the options it takes (those
 * of its DEFAULTS) from the configuration.
 * @param {object} config the resolved gateway configuration (lib/config/options.js)
 * @param {import('pino').Logger} log
 * @param {(config: object) => Map} [protocolNamespaces] the other protocols'
 *   namespaces, as the wiring attaches them (lib/core/namespaces.js)
 * @returns {Promise<Engine>}
 */
export async function createEngine(config, log, protocolNamespaces) {
  const Engine = await engines[config.engine]();
  const options = Object.fromEntries(Object.keys(Engine.DEFAULTS).map((key) => [key, config[key]]));
  await Engine.check?.(options); // a configuration the engine can tell is wrong only by asking: refused at start
  return new Engine({ ...options, log, protocolNamespaces });
}
