// The Redis engine's connections, for the three topologies it runs on:
// - one Redis (--redis-url);
// - a master with replicas behind Sentinel (--redis-sentinels): ioredis asks
//   the sentinels for the master, and its failover detector drops the
//   connections when they announce a new one, so a paused old master never
//   answers a publish again;
// - Redis Cluster (--redis-cluster): one ioredis Cluster for commands and
//   for pub/sub, which keeps one sharded subscriber connection per master
//   (SSUBSCRIBE, Redis 7+) and follows slot moves and failovers.
// The rest of the engine never asks which it has, except through `cluster`.
import { UsageError } from '../../core/errors.js';
import { require } from '../../runtime/require.js';

const { Redis, Cluster } = require('ioredis');
// ioredis's own slot function (its dependency): the same hash its Cluster routes by.
const calculateSlot = require(require.resolve('cluster-key-slot', { paths: [require.resolve('ioredis')] }));

const CONNECTION = {
  enableOfflineQueue: false, // unreachable: fail now, queue nothing
  autoResendUnfulfilledCommands: false, // a publish is never run twice
  autoResubscribe: false, // resubscribed by the engine, with the catch-up
  maxRetriesPerRequest: 0,
  commandTimeout: 5000, // a Redis that hangs fails the commands instead of holding them
  // A connect that is not answered (a dead master's host no longer answers
  // at all) is given up after this, and the next attempt asks the sentinels
  // again: ioredis's own 10 s is longer than a whole failover.
  connectTimeout: 2000,
  // Reconnects come at most half a second apart: with the connect timeout,
  // a partition's heal is met within 1.5 s (a SYN at once, again after 1 s,
  // given up at 2 s, the next 0.5 s later).
  retryStrategy: (attempt) => Math.min(attempt * 100, 500)
};
const SENTINEL_RETRY_MS = 1000;
const SENTINEL_COMMAND_MS = 2000;
const SEED_CHECK_MS = 2000;
const RESTART_MS = 100; // a Sentinel connection ioredis gave up is started again after this
const kClosed = Symbol('closed on purpose'); // set by closeRedis()

/** The hash slot of a key under Redis Cluster. */
export function slotOf(key) {
  return calculateSlot(key);
}

/**
 * @param {object} config
 * @param {string} config.redisUrl
 * @param {string} [config.redisSentinels] `host:port,…`
 * @param {string} config.redisMasterName
 * @param {string} [config.redisCluster] `host:port,…` seed nodes
 * @returns {{redis: Redis | Cluster, sub: Redis | Cluster, cluster: boolean}} the command
 *   connection and the subscriber (the same Cluster under --redis-cluster)
 */
export function connectRedis({ redisUrl, redisSentinels, redisMasterName, redisCluster }) {
  if (redisCluster) {
    const cluster = new Cluster(endpoints(redisCluster), {
      shardedSubscribers: true,
      enableOfflineQueue: false,
      enableAutoPipelining: true,
      scaleReads: 'master',
      slotsRefreshTimeout: 2000,
      clusterRetryStrategy: (attempt) => Math.min(attempt * 100, 2000),
      redisOptions: CONNECTION
    });
    return { redis: cluster, sub: cluster, cluster: true };
  }
  const make = () =>
    redisSentinels
      ? keepConnecting(new Redis({
          ...CONNECTION,
          sentinels: endpoints(redisSentinels),
          name: redisMasterName,
          failoverDetector: true,
          sentinelRetryStrategy: () => SENTINEL_RETRY_MS, // all sentinels down: keep asking, degraded meanwhile
          sentinelCommandTimeout: SENTINEL_COMMAND_MS, // a sentinel that does not answer is passed over for the next
          // The failover detector's connection to a sentinel that dropped (or
          // went silent: ./liveness.js) is tried again this soon, not after ioredis's minute.
          sentinelReconnectStrategy: () => SENTINEL_RETRY_MS,
          enableAutoPipelining: true
        }))
      : new Redis(redisUrl, { ...CONNECTION, enableAutoPipelining: true });
  return { redis: make(), sub: make(), cluster: false };
}

/**
 * Refuses a --redis-cluster seed that answers as a plain Redis, at start;
 * a seed that cannot be reached is not refused (the gateway starts degraded).
 * @throws {Error} naming the seed
 */
export async function checkClusterSeeds(seeds) {
  for (const { host, port } of endpoints(seeds)) {
    const probe = new Redis({ host, port, lazyConnect: true, connectTimeout: SEED_CHECK_MS, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => {});
    let info;
    try {
      await probe.connect();
      info = await probe.info('cluster');
    } catch {
      continue; // unreachable now
    } finally {
      probe.disconnect();
    }
    if (!/cluster_enabled:1/.test(info)) {
      throw new UsageError(`--redis-cluster: ${host}:${port} is a Redis without cluster mode (cluster_enabled:0); give it as --redis-url, or its Sentinels as --redis-sentinels`);
    }
  }
}

/** Closes a connection from connectRedis() for good: it is not started again. */
export function closeRedis(redis) {
  redis[kClosed] = true;
  redis.disconnect();
}

/**
 * A Sentinel connection that ioredis gives up for good ('end') is started
 * again, unless closeRedis() closed it. ioredis does so when a failover's
 * announcement (+switch-master, through the failover detector of the
 * connection that died) arrives while a reconnect is asking the sentinels
 * for the master: the detector closes the connector, the reconnect fails
 * "Connection is closed", and no retry follows. Under a full publish load a
 * master's death met that race in 2 and then 3 runs of ten, and the
 * engine then refused every publish until the gateway restarted.
 */
function keepConnecting(redis) {
  redis.on('end', () => {
    if (redis[kClosed]) return;
    setTimeout(() => {
      if (!redis[kClosed] && redis.status === 'end') redis.connect().catch(() => {}); // a failure schedules its own retries
    }, RESTART_MS).unref();
  });
  return redis;
}

/** The masters a command connection reaches now (`host:port`), to count failovers. */
export function masterAddresses(redis) {
  if (redis instanceof Cluster) return redis.nodes('master').map((node) => `${node.options.host}:${node.options.port}`);
  const stream = redis.stream;
  return stream?.remoteAddress === undefined ? [] : [`${stream.remoteAddress}:${stream.remotePort}`];
}

/** `host:port,…` as ioredis's [{host, port}]. */
function endpoints(list) {
  return list.split(',').map((item) => {
    const at = item.lastIndexOf(':');
    return { host: item.slice(0, at), port: Number(item.slice(at + 1)) };
  });
}
