// The Redis engine (`--engine redis`): several gateway machines share their
// channels through one Redis. A channel's seq, epoch and history live there,
// and one Lua script (./redis/publish.lua), called for a batch of publishes
// at a time, sequences each, keeps it and PUBLISHes it, so every node sees
// one order. Each node SUBSCRIBEs only
// to the channels its workers hold and delivers to them as the memory engine
// does (the rules are in ./index.js; the history's size and TTL are the
// channel's namespace's, given to the script with each publish; the TTL
// counts from a channel's last publish here, and Redis' maxmemory bounds it,
// not --history-memory). idempotencyKey and version are checked inside the
// publish script, so every node sees the same answer.
//
// Joining a subscriber to the live stream exactly, and catching up after
// an outage: ./redis/channels.js.
//
// Keys, all under `gw:{<channel>}` (./redis/keys.js): `gw:{c}:state` the hash {s: seq, e: epoch},
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
// they missed from the history, in order and once, with no action from the
// clients (none is told to recover: the history holds what they missed), and
// its members are read again, the joins and leaves missed told
// (./redis/members-told.js). A master
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
import { historyAnswer } from './history-read.js';
import { Namespaces } from '../core/namespaces.js';
import { CONTROL_CHANNEL, RemoteCalls } from './redis/calls.js';
import { RemoteUsers } from './redis/users.js';
import { RemoteRates } from './redis/rates.js';
import { RedisPresence } from './redis/presence.js';
import { checkClusterSeeds, closeRedis, connectRedis, masterAddresses } from './redis/connect.js';
import { PlainSubscriber, ShardedSubscriber } from './redis/subscriber.js';
import { RedisPublisher } from './redis/publisher.js';
import { RedisChannels } from './redis/channels.js';
import { channelOfTag, newEpoch, tagOf } from './redis/keys.js';
import { RemoteOccupancy } from './redis/occupancy.js';
import { tellAll } from './listeners.js';
import { RemoteDepartures } from './redis/departures.js';
import { Liveness } from './redis/liveness.js';
import { optionsOver, requireNumbers } from './check-options.js';
import { defaultsOf } from '../config/options.js';
import { engineUnavailable } from '../core/errors.js';

/** Publishes waiting for Redis past which the workers are told to hold off; twice that, refused. */
const BUSY_PUBLISHES = 5000;
const PRESENCE_CHANNELS_SHOWN = 20; // this node's largest, on the status page

/** @implements {import('./index.js').Engine} with its cluster-wide part */
export class RedisEngine {
  /** Its options and their defaults (the gateway's flags, lib/config/options.js). */
  static DEFAULTS = {
    ...defaultsOf(
      'redis-url',
      'redis-sentinels',
      'redis-master-name',
      'redis-cluster',
      'redis-wait-replicas',
      'redis-wait-timeout',
      'history-size',
      'history-ttl',
      'max-conns-per-user',
      'presence-ttl',
      'presence-max-clients',
      'join-leave-interval'
    ),
    namespaces: []
  };

  /** A --redis-cluster seed that is a plain Redis is refused at start, in words. */
  static async check({ redisCluster }) {
    if (redisCluster) await checkClusterSeeds(redisCluster);
  }

  /**
   * @param {object} given each option defaults to its flag's default (DEFAULTS)
   * @param {string} [given.redisUrl]
   * @param {string} [given.redisSentinels] Sentinel instead of redisUrl
   * @param {string} [given.redisMasterName]
   * @param {string} [given.redisCluster] Redis Cluster instead of redisUrl
   * @param {number} [given.redisWaitReplicas] replicas that must hold a publish before it is acknowledged
   * @param {number} [given.redisWaitTimeout] ms
   * @param {number} [given.historySize] outside namespaces
   * @param {number} [given.historyTtl] seconds, outside namespaces
   * @param {object[]} [given.namespaces]
   * @param {number} [given.maxConnsPerUser] 0: no cap to share
   * @param {number} [given.presenceTtl] seconds
   * @param {number} [given.presenceMaxClients]
   * @param {number} [given.joinLeaveInterval]
   * @param {import('pino').Logger} given.log
   * @param {(config: object) => Map} [given.protocolNamespaces] the other protocols' namespaces (lib/core/namespaces.js)
   * @throws {RangeError} for a number above given but not finite, or below its least value, before any connection is made
   */
  constructor(given) {
    const options = optionsOver(RedisEngine.DEFAULTS, given);
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
    this.liveness.on('up', () => this.channels.cycle()); // a silent spell held the pending subscribes back
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
      observe: (seconds, count) => this.instruments?.published(seconds, count),
      log
    });
    this.channels = new RedisChannels({
      redis,
      sub: this.sub,
      cluster,
      waitReplicas: options.redisWaitReplicas,
      waitTimeout: options.redisWaitTimeout,
      answering: () => this.available && this.subscribing,
      namespaceOf: (channel) => this.namespaces.of(channel),
      routed: (channel, occupied) => {
        this.occupancy?.changed(channel, occupied);
        this.presence.routed(channel, occupied);
      },
      resubscribed: (channel, lost) => {
        this.presence.resync(channel, lost);
        for (const listener of this.resubscribedListeners) listener(channel);
      },
      log
    });
    this.calls = new RemoteCalls(redis, cluster ? 'spublish' : 'publish');
    if (maxConnsPerUser > 0) this.users = new RemoteUsers(redis, maxConnsPerUser);
    this.appConnections = new RemoteUsers(redis, 0, 'apps'); // each Pusher app's maxConnections: attached only where apps are served
    this.appRates = new RemoteRates(redis); // each Pusher app's backend events per second
    this.occupancy = undefined; // once a listener is added: this node's routes, told to Redis (./redis/occupancy.js)
    this.occupancyListeners = [];
    this.resubscribedListeners = [];
    this.departures = new RemoteDepartures(redis);
    this.sub.on('message', (name, message) => this.received(name, message));
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
    this.keeper = setInterval(() => this.channels.keepAlive(), (shortest * 1000) / 3);
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
   * @param {import('../core/seams.js').Publication} publication read now, not kept
   * @param {import('./publication.js').PublishReply} [reply]
   */
  publish(publication, reply) {
    if (this.publisher.waiting >= 2 * BUSY_PUBLISHES || !this.available) return reply?.answered(null);
    const { channel } = publication;
    this.publisher.publish(tagOf(channel), publication, newEpoch(), this.namespaces.of(channel), reply);
  }

  /** `answer` is called once the read is in order with the live messages (./redis/channels.js). */
  subscribe(channel, route, since, answer) {
    this.channels.subscribe(channel, route, since, answer);
  }

  unsubscribe(channel, route) {
    this.channels.unsubscribe(channel, route);
  }

  detach(route) {
    this.presence.detach(route);
    this.channels.detach(route);
  }

  /** The server API's history read, straight from Redis; the stream is trimmed about its size (MAXLEN ~), the answer to it exactly. */
  history(channel, query, answer) {
    const tag = tagOf(channel);
    const since = query.since;
    const { historySize, historyTtl } = this.namespaces.of(channel);
    this.redis.gw_read(`${tag}:state`, `${tag}:history`, newEpoch(), historyTtl, String(since?.seq ?? 0), since?.epoch ?? '', '', '', '').then(
      ([seq, epoch, entries]) => answer(historyAnswer(epoch, Number(seq), historySize === 0 ? [] : entries.slice(-historySize).map(entryOf), query)),
      () => answer(engineUnavailable())
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
    this.occupancy = new RemoteOccupancy(this.redis, () => this.channels.withRoutes(), tellAll(this.occupancyListeners), this.log);
  }

  /**
   * `listener(channel)` once a channel routed here is SUBSCRIBEd again after
   * the subscriptions dropped, and its routes caught up: what was told of it
   * over pub/sub meanwhile (a count) never reached this node.
   */
  onResubscribed(listener) {
    this.resubscribedListeners.push(listener);
  }

  /** The per-user view of presence (MemberListener in ./index.js). */
  onMember(listener) {
    this.presence.onMember(listener);
  }

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

  /** Channels held on this node (the history is in Redis), the idempotency keys dropped early, this node's presence entries. */
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
    this.calls.stop();
    for (const connection of this.connections) closeRedis(connection);
  }

  /** A message on the control channel (the cluster's calls), or on a channel held here: a live message, or a presence frame. */
  received(name, message) {
    if (name === CONTROL_CHANNEL) return this.calls.received(message);
    const channel = channelOfTag(name);
    if (message.charCodeAt(0) !== 123) return this.channels.received(channel, message);
    if (this.channels.get(channel) !== undefined) this.presence.received(channel, message); // `{`: a join or leave from ./redis/presence.lua
  }

  /** A connection is (again) ready: the outage itself is logged by the liveness. */
  ready(name) {
    if (name === 'commands') {
      this.countFailover();
      this.presence.refresh(); // this node's entries are back at once, and any announced leave undone (./redis/presence.js)
    }
    if (name === 'subscriber') {
      this.sub.subscribe([CONTROL_CHANNEL]).catch(() => {}); // a failure drops this connection: ready again later
      this.channels.resubscribe();
    } else this.channels.cycle();
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
}

/** A stream entry [id, ['d', data]] as [seq, data]. */
function entryOf([id, fields]) {
  return [Number(id.slice(0, id.indexOf('-'))), fields[1]];
}
