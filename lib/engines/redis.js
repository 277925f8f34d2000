// The Redis engine (`--engine redis`): several gateway machines share their
// channels through one Redis. A channel's seq, epoch and history live there,
// and one Lua script per publish (./redis/publish.lua) sequences it, keeps it
// and PUBLISHes it, so every node sees one order. Each node SUBSCRIBEs only
// to the channels its workers hold and delivers to them as the memory engine
// does (the rules are in ./index.js; the history's size and TTL are the
// channel's namespace's, given to the script with each publish; the TTL
// counts from a channel's last publish here, and Redis' maxmemory bounds it,
// not --history-memory). idempotencyKey and version are checked inside the
// publish script, so every node sees the same answer.
//
// Joining a subscriber to the live stream exactly: the channel is SUBSCRIBEd
// first; then ./redis/read.lua reads its seq S (and the history after
// `since`) in one atomic step; then a PING on the subscriber connection comes
// back after every message published before that read, so every message up
// to S has arrived. Meanwhile the channel's live messages are held; then its
// routes get the held messages up to S, the subscribe answers (at S), and the
// held messages after S, in that order (lib/worker/relay.js says why).
//
// Keys, all under `gw:{<channel>}` (a channel name has no braces, so none can
// reach another's keys or the control channel, and a channel's keys share a
// Redis Cluster slot): `gw:{c}:state` the hash {s: seq, e: epoch},
// `gw:{c}:history` the capped stream, `gw:{c}:idem` and `gw:{c}:idemt` the
// idempotency keys (./redis/publish.lua); messages are PUBLISHed on `gw:{c}` as
// "<seq> <epoch> <dataJson>".
//
// Failure: commands are never queued while Redis is unreachable (publishes
// fail at once, and the relay tells the workers to refuse them), and a Redis
// that goes silent (a partition) counts as unreachable within a second
// (./redis/liveness.js, the one place availability is decided); a bounded
// number may wait for a slow Redis. After the subscriptions drop (the
// connection came back, Sentinel moved it to a new master, a Cluster shard
// failed over), every channel is SUBSCRIBEd again and its routes get what
// they missed from the history, with no action from the clients. A master
// that comes back behind what this node delivered (a failover to a replica
// that lacked the tail) starts the channel's sequence over in a new epoch
// (./redis/read.lua): reported to the subscribers, never a silent gap.
// Under --redis-wait-replicas that cannot happen: a node delivers only what
// the replicas hold (live messages leave once WAIT confirms them,
// ./redis/publisher.js, and a read is followed by a WAIT too), so a failover
// keeps the epoch. Live messages may then arrive out of seq order (two
// nodes' confirmations race): one ahead of the next seq waits a moment for
// its predecessors, then they are read from the history.
//
// Presence (./redis/presence.js and .lua): keys `gw:{c}:presence`,
// `gw:{c}:presence:exp`, `gw:{c}:presence:users`, `gw:{c}:presence:digest`
// and `gw:{c}:presence:gone` (the sweep's tombstones); its join and leave frames
// are PUBLISHed on `gw:{c}` too, as JSON text (a `{` where a seq would be).
//
// Topologies (one Redis, Sentinel, Cluster: ./redis/connect.js and
// ./redis/subscriber.js) and the batched publishes with WAIT
// (./redis/publisher.js) are kept apart from the rules here.
import { readFileSync } from 'node:fs';
import { Op } from '../ipc.js';
import { addRoute, pushAll, removeRoute } from './routes.js';
import { subscribeReply } from './subscribe-reply.js';
import { historyAnswer } from './history-read.js';
import { Namespaces } from '../namespaces.js';
import { ErrorCode, GatewayError } from '../errors.js';
import { CONTROL_CHANNEL, RemoteCalls } from './redis/calls.js';
import { RemoteUsers } from './redis/users.js';
import { RemoteRates } from './redis/rates.js';
import { RedisPresence } from './redis/presence.js';
import { checkClusterSeeds, closeRedis, connectRedis, masterAddresses } from './redis/connect.js';
import { PlainSubscriber, ShardedSubscriber } from './redis/subscriber.js';
import { RedisPublisher } from './redis/publisher.js';
import { RemoteOccupancy } from './redis/occupancy.js';
import { tellAll } from './listeners.js';
import { messageOp } from './publication.js';
import { RemoteDepartures } from './redis/departures.js';
import { Liveness } from './redis/liveness.js';
import { requireNumbers } from './check-options.js';

/** Publishes waiting for Redis past which the workers are told to hold off; twice that, refused. */
const BUSY_PUBLISHES = 5000;
const RETRY_MS = 500;
const GAP_WAIT_MS = 50; // a message ahead of the next seq waits this long for its predecessors, then they are read
const PREFIX = 'gw:{';
const PRESENCE_CHANNELS_SHOWN = 20; // this node's largest, on the status page

class ChannelState {
  constructor() {
    this.routes = undefined;
    this.seq = 0; // the last seq the routes were sent
    this.data = ''; // and its data: a catch-up checks Redis still holds it (./redis/read.lua)
    this.epoch = undefined;
    this.waiting = []; // subscribes for the next read: {route, since, answer}
    this.reading = undefined; // subscribes the read in flight answers
    this.held = undefined; // live messages [seq, entry] received during that read
    this.ahead = undefined; // live messages past the next seq: Map seq -> entry
    this.gapTimer = undefined;
  }
}

/** A live message's entry when it names a client to leave out; otherwise the entry is its data. */
class Excluded {
  constructor(data, exclude) {
    this.data = data;
    this.exclude = exclude;
  }
}

/** @implements {import('./index.js').Engine} with its cluster-wide part */
export class RedisEngine {
  /** A --redis-cluster seed that is a plain Redis is refused at start, in words. */
  static async check({ redisCluster }) {
    if (redisCluster) await checkClusterSeeds(redisCluster);
  }

  /**
   * @param {object} options the resolved configuration (lib/config.js), and the log
   * @param {string} options.redisUrl
   * @param {string} [options.redisSentinels] Sentinel instead of redisUrl
   * @param {string} options.redisMasterName
   * @param {string} [options.redisCluster] Redis Cluster instead of redisUrl
   * @param {number} options.redisWaitReplicas replicas that must hold a publish before it is acknowledged
   * @param {number} options.redisWaitTimeout ms
   * @param {number} options.historySize outside namespaces
   * @param {number} options.historyTtl seconds, outside namespaces
   * @param {object[]} options.namespaces
   * @param {number} options.maxConnsPerUser 0: no cap to share
   * @param {number} options.presenceTtl seconds
   * @param {number} options.presenceMaxClients
   * @param {number} options.joinLeaveInterval
   * @param {import('pino').Logger} options.log
   * @param {(config: object) => Map} [options.protocolNamespaces] the other protocols' namespaces (lib/namespaces.js)
   * @throws {RangeError} for a number above that is missing or not finite, before any connection is made
   */
  constructor(options) {
    requireNumbers('RedisEngine', options, {
      redisWaitReplicas: 0,
      redisWaitTimeout: 1,
      historySize: 0,
      historyTtl: 1,
      maxConnsPerUser: 0,
      presenceTtl: 1,
      presenceMaxClients: 1,
      joinLeaveInterval: 1
    });
    const { maxConnsPerUser, log } = options;
    this.log = log;
    this.protocolNamespaces = options.protocolNamespaces;
    const { redis, sub, cluster } = connectRedis(options);
    this.redis = redis;
    this.cluster = cluster;
    this.sub = cluster ? new ShardedSubscriber(sub) : new PlainSubscriber(sub);
    this.connections = cluster ? [redis] : [redis, sub];
    this.subConnection = sub;
    this.masters = new Set(); // where the commands went last: a change is a failover
    this.failovers = 0;
    this.instruments = undefined;
    // A WAIT holds the replies behind it back for up to its timeout: not silence.
    this.liveness = new Liveness({ log, slackMs: options.redisWaitReplicas > 0 ? options.redisWaitTimeout : 0 });
    this.liveness.watch('commands', redis);
    if (!cluster) this.liveness.watch('subscriber', sub);
    this.liveness.on('up', () => this.cycle()); // a silent spell held the pending subscribes back
    redis.on('ready', () => this.ready('commands'));
    if (cluster) redis.on('refresh', () => this.countFailover()); // a shard's replica took over its slots
    this.sub.on('lost', () => this.ready('subscriber'));
    this.waitReplicas = options.redisWaitReplicas;
    this.waitTimeout = options.redisWaitTimeout;
    this.publisher = new RedisPublisher({
      redis,
      cluster,
      waitReplicas: options.redisWaitReplicas,
      waitTimeout: options.redisWaitTimeout,
      observe: (seconds, count) => this.instruments?.published(seconds, count)
    });
    const lua = readFileSync(new URL('./redis/read.lua', import.meta.url), 'utf8');
    redis.defineCommand('gw_read', { numberOfKeys: 2, lua });
    this.calls = new RemoteCalls(redis, cluster ? 'spublish' : 'publish');
    if (maxConnsPerUser > 0) this.users = new RemoteUsers(redis, maxConnsPerUser);
    this.appConnections = new RemoteUsers(redis, 0, 'apps'); // each Pusher app's maxConnections: attached only where apps are served
    this.appRates = new RemoteRates(redis); // each Pusher app's backend events per second
    this.occupancy = undefined; // once a listener is added: this node's routes, told to Redis (./redis/occupancy.js)
    this.occupancyListeners = [];
    this.departures = new RemoteDepartures(redis);
    this.sub.on('message', (name, message) => {
      if (name === CONTROL_CHANNEL) this.calls.received(message);
      else this.received(name, message);
    });
    this.channels = new Map(); // name -> ChannelState
    this.toSubscribe = new Set();
    this.toUnsubscribe = new Set();
    this.toRead = new Set();
    this.cycling = false;
    this.configure(options);
    this.presence = new RedisPresence({
      redis,
      answering: () => this.available,
      publish: cluster ? 'spublish' : 'publish',
      tagOf,
      ttl: options.presenceTtl,
      maxClients: options.presenceMaxClients,
      interval: options.joinLeaveInterval,
      routesOf: (channel) => this.channels.get(channel),
      namespaceOf: (channel) => this.namespaces.of(channel)
    });
  }

  /** The namespaces (at start, and again after SIGHUP). */
  configure(config) {
    this.namespaces = new Namespaces(config, this.protocolNamespaces);
    const shortest = Math.min(...this.namespaces.all().map((ns) => ns.historyTtl));
    // Keys expire a history TTL after the last publish; a channel held here keeps its seq and epoch.
    clearInterval(this.keeper);
    this.keeper = setInterval(() => this.keepAlive(), (shortest * 1000) / 3);
    this.keeper.unref();
  }

  /** @param {{published: (seconds: number, count: number) => void, failedOver: () => void}} instruments */
  instrument(instruments) {
    this.instruments = instruments;
  }

  /**
   * Publishes go out on the command connection, refused at once while it
   * does not answer (./redis/liveness.js); the subscriber's outages are caught up.
   */
  get available() {
    return this.liveness.answering(this.redis);
  }

  /** Whether the subscriber connection answers (under Redis Cluster, the cluster's). */
  get subscribing() {
    return this.liveness.answering(this.subConnection);
  }

  get congested() {
    return this.publisher.waiting >= BUSY_PUBLISHES;
  }

  /**
   * `reply` is answered once Redis stored it (and --redis-wait-replicas
   * replicas hold it), or skipped it (a duplicate key, a stale version), or
   * with null: refused, or failed.
   * @param {import('./publication.js').Publication} publication read now, not kept
   * @param {import('./publication.js').PublishReply} [reply]
   */
  publish(publication, reply) {
    if (this.publisher.waiting >= 2 * BUSY_PUBLISHES || !this.available) return reply?.answered(null);
    const { channel } = publication;
    this.publisher.publish(tagOf(channel), publication, newEpoch(), this.namespaces.of(channel), reply);
  }

  /** `answer` is called once the read is in order with the live messages. */
  subscribe(channel, route, since, answer) {
    let state = this.channels.get(channel);
    if (state === undefined) {
      state = new ChannelState();
      this.channels.set(channel, state);
      this.toUnsubscribe.delete(channel);
      this.toSubscribe.add(channel);
    }
    state.waiting.push({ route, since, answer });
    this.toRead.add(channel);
    this.cycle();
  }

  unsubscribe(channel, route) {
    const state = this.channels.get(channel);
    if (state === undefined) return;
    if (removeRoute(state, route)) this.occupancy?.changed(channel, false);
    // Asked after the subscribe: answered all the same, and not routed.
    for (const request of state.waiting) if (request.route === route) request.route = undefined;
    for (const request of state.reading ?? []) if (request.route === route) request.route = undefined;
    this.forgetIfUnused(channel, state);
  }

  detach(route) {
    this.presence.detach(route);
    for (const [channel, state] of this.channels) {
      if (removeRoute(state, route)) this.occupancy?.changed(channel, false);
      state.waiting = state.waiting.filter((request) => request.route !== route);
      if (state.reading !== undefined) state.reading = state.reading.filter((request) => request.route !== route);
      this.forgetIfUnused(channel, state);
    }
  }

  /** The server API's history read, straight from Redis; the stream is trimmed about its size (MAXLEN ~), the answer to it exactly. */
  history(channel, query, answer) {
    const tag = tagOf(channel);
    const since = query.since;
    const { historySize, historyTtl } = this.namespaces.of(channel);
    this.redis.gw_read(`${tag}:state`, `${tag}:history`, newEpoch(), historyTtl, String(since?.seq ?? 0), since?.epoch ?? '', '', '', '').then(
      ([seq, epoch, entries]) => answer(historyAnswer(epoch, Number(seq), historySize === 0 ? [] : entries.slice(-historySize).map(entryOf), query)),
      () => answer({ error: ErrorCode.UNAVAILABLE, message: 'the engine (Redis) did not answer: retry shortly' })
    );
  }

  /**
   * Occupancy across the nodes: each node's first route to a channel and its
   * last go to Redis, where one script decides the cluster-wide transitions
   * and answers each to the node whose call made it (./redis/occupancy.lua).
   */
  onOccupancy(listener) {
    this.occupancyListeners.push(listener);
    if (this.occupancy !== undefined) return;
    const routed = () => [...this.channels].filter(([, state]) => state.routes !== undefined).map(([channel]) => channel);
    this.occupancy = new RemoteOccupancy(this.redis, routed, tellAll(this.occupancyListeners), this.log);
  }

  /** The per-user view of presence (MemberListener in ./index.js). */
  onMember(listener) {
    this.presence.onMember(listener);
  }

  /** Channels held on this node (the history is in Redis), the idempotency keys dropped early, this node's presence entries. */
  /**
   * Whether this node is the first of the cluster to claim `key` within `ms`
   * (an event sent once for the cluster per window); true while Redis cannot
   * answer: a duplicate rather than a lost event.
   * @returns {Promise<boolean>}
   */
  claimOnce(key, ms) {
    if (this.redis.status !== 'ready') return Promise.resolve(true);
    return this.redis.set(`gw:{#once}:${key}`, '1', 'PX', ms, 'NX').then((answer) => answer === 'OK', () => true);
  }

  figures() {
    const table = this.presence.table;
    return {
      channels: this.channels.size,
      historyBytes: 0,
      idempotencyKeys: 0,
      idempotencyDropped: this.publisher.idempotencyDropped,
      presenceClients: table.size,
      presenceChannels: table.largest(PRESENCE_CHANNELS_SHOWN)
    };
  }

  stop() {
    clearInterval(this.keeper);
    this.liveness.stop();
    this.presence.stop();
    this.users?.stop();
    this.appConnections.stop();
    this.occupancy?.stop();
    for (const connection of this.connections) closeRedis(connection);
  }

  forgetIfUnused(channel, state) {
    if (state.routes !== undefined || state.waiting.length > 0 || state.reading !== undefined) return;
    this.channels.delete(channel);
    this.dropAhead(state);
    this.toSubscribe.delete(channel);
    this.toRead.delete(channel);
    this.toUnsubscribe.add(channel);
    this.cycle();
  }

  received(name, message) {
    const channel = name.slice(PREFIX.length, -1);
    const state = this.channels.get(channel);
    if (state === undefined) return;
    if (message.charCodeAt(0) === 123) return this.presence.received(channel, message); // `{`: a join or leave from ./redis/presence.lua
    const space = message.indexOf(' ');
    const seq = Number(message.slice(0, space));
    const dataStart = message.indexOf(' ', space + 1) + 1;
    // Not from publish.lua (the data itself is trusted: whoever can write to Redis owns the channels).
    if (!(seq > 0) || dataStart === 0) return;
    const dataJson = message.slice(dataStart);
    // `<epoch>/<exclude>`: a client to leave out (./redis/publisher.js)
    const sent = message.slice(space + 1, dataStart - 1);
    const slash = sent.indexOf('/');
    const entry = slash === -1 ? dataJson : new Excluded(dataJson, sent.slice(slash + 1));
    if (state.held !== undefined) {
      state.held.push(seq, entry);
      return;
    }
    const epoch = slash === -1 ? sent : sent.slice(0, slash);
    if (epoch !== state.epoch) this.restart(channel, state, epoch);
    this.deliver(channel, state, seq, entry);
  }

  /** A live message in seq order; one ahead of the next seq waits for its predecessors (see the header). */
  deliver(channel, state, seq, dataJson) {
    if (seq <= state.seq) return; // already sent by a catch-up
    if (seq > state.seq + 1) {
      state.ahead ??= new Map();
      state.ahead.set(seq, dataJson);
      state.gapTimer ??= setTimeout(() => this.fillGap(channel, state), GAP_WAIT_MS);
      return;
    }
    this.send(channel, state, seq, dataJson);
    if (state.ahead === undefined) return;
    for (let next = state.ahead.get(seq + 1); next !== undefined; next = state.ahead.get(state.seq + 1)) {
      state.ahead.delete(state.seq + 1);
      this.send(channel, state, state.seq + 1, next);
    }
    if (state.ahead.size === 0) this.dropAhead(state);
  }

  /** Predecessors that did not come live (refused, or their node went away): read from the history. */
  fillGap(channel, state) {
    state.gapTimer = undefined;
    if (this.channels.get(channel) !== state || state.ahead === undefined) return;
    this.toRead.add(channel);
    this.cycle();
  }

  /** Sends what waited ahead (a read just sent the routes what came before it), in seq order. */
  flushAhead(channel, state) {
    if (state.ahead === undefined) return;
    const ahead = [...state.ahead].sort(([x], [y]) => x - y);
    this.dropAhead(state);
    for (const [seq, dataJson] of ahead) this.send(channel, state, seq, dataJson);
  }

  dropAhead(state) {
    clearTimeout(state.gapTimer);
    state.gapTimer = undefined;
    state.ahead = undefined;
  }

  /** Runs the pending SUBSCRIBEs, reads and answers, one batch at a time. */
  async cycle() {
    if (this.cycling) return;
    this.cycling = true;
    await null; // what the rest of this turn asks joins the batch
    try {
      while (this.available && this.subscribing && this.toSubscribe.size + this.toUnsubscribe.size + this.toRead.size > 0) {
        if (!(await this.step())) {
          await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
        }
      }
    } finally {
      this.cycling = false;
    }
  }

  /** @returns {Promise<boolean>} false when Redis failed it (all of it is asked again) */
  async step() {
    const unsubscribe = [...this.toUnsubscribe];
    const subscribe = [...this.toSubscribe];
    const reads = [...this.toRead].map((channel) => [channel, this.channels.get(channel)]);
    this.toUnsubscribe.clear();
    this.toSubscribe.clear();
    this.toRead.clear();
    for (const [, state] of reads) {
      state.reading = state.waiting;
      state.waiting = [];
      state.held = [];
    }
    try {
      this.sub.unsubscribe(unsubscribe.map(tagOf));
      await this.sub.subscribe(subscribe.map(tagOf));
      const answers = await Promise.all(reads.map(([channel, state]) => this.read(channel, state)));
      await this.replicated(); // what the reads saw is on the replicas: a failover cannot take it back
      await this.sub.ping(reads.map(([channel]) => tagOf(channel))); // every message published before those reads has arrived
      for (let i = 0; i < reads.length; i++) this.complete(reads[i][0], reads[i][1], answers[i]);
      return true;
    } catch (err) {
      this.log.warn({ err: err.message }, 'redis engine: subscribe step failed; retrying');
      for (const channel of subscribe) if (this.channels.has(channel)) this.toSubscribe.add(channel);
      for (const [channel, state] of reads) this.retry(channel, state);
      return false;
    }
  }

  /** Under --redis-wait-replicas: throws unless the replicas hold every write before it (the reads' EXPIRE included, so all they read). */
  async replicated() {
    if (this.waitReplicas === 0) return;
    const masters = this.cluster ? this.redis.nodes('master') : [this.redis];
    const counts = await Promise.all(masters.map((master) => master.wait(this.waitReplicas, this.waitTimeout)));
    if (counts.some((count) => count < this.waitReplicas)) throw new GatewayError(ErrorCode.UNAVAILABLE, `fewer than ${this.waitReplicas} replicas confirmed a read`);
  }

  read(channel, state) {
    // Routes already here may lack messages up to the read (live ones come later under WAIT): read them.
    let from = state.routes !== undefined ? state.seq : Infinity;
    let latest = false;
    for (const { since } of state.reading) {
      if (since === undefined) latest = true;
      else if (since.seq < from) from = since.seq;
    }
    const ns = this.namespaces.of(channel);
    const tag = tagOf(channel);
    const after = from === Infinity ? '' : String(from);
    const delivered = state.seq > 0 ? String(state.seq) : '';
    const wantLatest = latest && ns.latest ? '1' : '';
    return this.redis.gw_read(`${tag}:state`, `${tag}:history`, newEpoch(), ns.historyTtl, after, state.epoch ?? '', delivered, state.data, wantLatest);
  }

  /** Sends the routes what they lack up to the read, answers the subscribes, then the held messages. */
  complete(channel, state, [seqText, epoch, entries]) {
    const seq = Number(seqText);
    const held = state.held;
    const requests = state.reading;
    state.held = undefined;
    state.reading = undefined;
    const history = entries.map(entryOf);
    // After a new epoch the history holds it from its start (read.lua): the routes get all they missed of it.
    if (epoch !== state.epoch) this.restart(channel, state, epoch);
    if (state.routes !== undefined) for (const [s, data] of history) this.send(channel, state, s, data);
    for (let i = 0; i < held.length && held[i] <= seq; i += 2) this.send(channel, state, held[i], held[i + 1]);
    this.flushAhead(channel, state);
    state.seq = Math.max(state.seq, seq);
    const latest = this.namespaces.of(channel).latest;
    for (const { route, since, answer } of requests) {
      answer(subscribeReply(epoch, seq, since, (after) => replayAfter(history, after, seq), latest));
      if (route !== undefined && addRoute(state, route)) this.occupancy?.changed(channel, true);
    }
    for (let i = 0; i < held.length; i += 2) if (held[i] > seq) this.deliver(channel, state, held[i], held[i + 1]);
    this.forgetIfUnused(channel, state);
  }

  /** A new sequence (Redis lost the channel's keys): the routes follow it from its start. */
  restart(channel, state, epoch) {
    if (state.epoch !== undefined) pushAll(state, [Op.EPOCH, channel, epoch]);
    this.dropAhead(state); // the old sequence's
    state.epoch = epoch;
    state.seq = 0;
    state.data = '';
  }

  /** @param {string | Excluded} entry a message's data, with the client to leave out when there is one */
  send(channel, state, seq, entry) {
    if (seq <= state.seq) return;
    state.seq = seq;
    if (typeof entry === 'string') {
      state.data = entry;
      pushAll(state, [Op.MSG, channel, seq, entry]);
    } else {
      state.data = entry.data;
      pushAll(state, messageOp(channel, seq, entry.data, entry.exclude));
    }
  }

  /** A step that failed: its subscribes wait for the next, its held messages go out now. */
  retry(channel, state) {
    const held = state.held ?? [];
    state.waiting = state.reading.concat(state.waiting);
    state.reading = undefined;
    state.held = undefined;
    for (let i = 0; i < held.length; i += 2) this.deliver(channel, state, held[i], held[i + 1]);
    this.toRead.add(channel);
  }

  /** A connection is (again) ready: the outage itself is logged by the liveness. */
  ready(name) {
    if (name === 'commands') {
      this.countFailover();
      this.presence.refresh(); // this node's entries are back at once, and any announced leave undone (./redis/presence.js)
    }
    if (name === 'subscriber') {
      this.sub.subscribe([CONTROL_CHANNEL]).catch(() => {}); // a failure drops this connection: ready again later
      // A new connection subscribes to nothing: every channel again, and its routes catch up.
      for (const channel of this.channels.keys()) {
        this.toSubscribe.add(channel);
        this.toRead.add(channel);
      }
    }
    this.cycle();
  }

  /** A master this node had not published to before took over from one it had. */
  countFailover() {
    const now = masterAddresses(this.redis);
    if (this.masters.size > 0 && now.some((address) => !this.masters.has(address))) {
      this.failovers++;
      this.instruments?.failedOver();
      this.log.warn({ masters: now, before: [...this.masters] }, 'redis engine: failed over to a new master');
    }
    this.masters = new Set(now);
  }

  /** Renews the state key of every channel held here, so its seq and epoch outlive quiet spells. */
  keepAlive() {
    if (!this.available) return;
    for (const channel of this.channels.keys()) this.redis.expire(`${tagOf(channel)}:state`, this.namespaces.of(channel).historyTtl).catch(() => {});
  }
}

/** `gw:{<channel>}`: the channel's pub/sub name, and its keys' common start. */
function tagOf(channel) {
  return `${PREFIX}${channel}}`;
}

/** A random 31-bit integer in base 36, offered for a sequence that starts now. */
function newEpoch() {
  return ((Math.random() * 0x7fffffff) | 0).toString(36);
}

/** A stream entry [id, ['d', data]] as [seq, data]. */
function entryOf([id, fields]) {
  return [Number(id.slice(0, id.indexOf('-'))), fields[1]];
}

/** The data after `since` up to `seq` from history entries [[seq, data]], or undefined if they do not reach. */
function replayAfter(history, since, seq) {
  const first = history.findIndex(([s]) => s > since);
  if (first === -1 || history[first][0] !== since + 1 || history.at(-1)[0] !== seq) return undefined;
  return history.slice(first).map(([, data]) => data);
}
