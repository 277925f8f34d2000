// Whether the Redis engine's connections answer: the one place the engine's
// availability is decided. ioredis's own status only changes when a socket
// errs or closes; a silent partition (packets dropped, no FIN, no RST) leaves
// it 'ready' while every command waits for its timeout. So each connection
// watched here also carries a heartbeat: a PING every HEARTBEAT_MS, and a
// connection that has received nothing for SILENT_MS since a PING was sent
// counts as down at once (the relay then refuses publishes), and is torn down
// after TEARDOWN_MS (ioredis reconnects it; a socket stuck in TCP
// retransmission would otherwise keep it away for seconds after the heal),
// with a reset, so nothing written into the silence runs after the heal.
// Any byte received counts as an answer, so a PING queued behind a long
// pipeline is not mistaken for silence; a blocking WAIT holds the replies
// back for up to its timeout, which is added to both limits (`slackMs`).
//
// Some connections come and go with a watched one, and are followed on
// every tick: a Cluster's shard subscribers (ioredis replaces one that
// ended) and, under Sentinel, the connections ioredis's failover detector
// keeps to the Sentinels to hear of a failover. Each has a heartbeat too.
// A shard subscriber counts as one of the Cluster's connections. A Sentinel
// that goes silent is torn down (ioredis connects to it again later) and
// left for the others: the master connection counts as down only while none
// of its Sentinels answers, since a master replaced behind a node that hears
// no Sentinel would take its writes for good (the old master's data is
// dropped when it rejoins as a replica).
//
// The engine is up when every watched connection answers; one log line when
// it goes down, one when it comes back.
import { EventEmitter } from 'node:events';
import { checkSentinelConnections, sentinelConnectionsOf, shardSubscriberConnections } from '../../runtime/internals.js';

const HEARTBEAT_MS = 500;
const SILENT_MS = 500;
const TEARDOWN_MS = 2000; // longer than a stall Redis recovers from (a 1.5 s DEBUG SLEEP keeps its connections)
const TICK_MS = 100; // how often the limits are checked
const EVENTS = ['ready', 'close', 'end', 'error']; // ioredis's: the status may have changed

/** One connection's heartbeat: `silent` once it stops answering, torn down if it stays so. */
class RedisHeartbeat {
  constructor(redis, slackMs, changed) {
    this.redis = redis;
    this.slackMs = slackMs;
    this.changed = changed;
    this.silent = false;
    this.pingAt = 0; // when the PING waiting for an answer was sent (0: none)
    this.lastPing = 0;
    this.heardAt = Date.now(); // the last byte received (or the connect), from when it is watched
    this.answered = true; // a Sentinel's: whether it answered when last told in the log
    this.heard = () => {
      this.heardAt = Date.now();
      if (this.silent) this.setSilent(false);
    };
    this.stream = undefined; // the socket listened to
    this.connected = () => {
      this.pingAt = 0;
      this.heardAt = Date.now();
      if (redis.stream !== this.stream) {
        this.stream?.off('data', this.heard);
        this.stream = redis.stream;
        this.stream?.on('data', this.heard);
      }
      if (this.silent) this.setSilent(false);
    };
    redis.on('connect', this.connected);
    if (redis.stream !== undefined) this.connected();
  }

  tick(now) {
    if (this.redis.status !== 'ready') {
      this.pingAt = 0;
      if (this.silent) this.setSilent(false); // the status tells now
      return;
    }
    if (this.pingAt === 0) {
      if (now - this.lastPing < HEARTBEAT_MS) return;
      this.pingAt = this.lastPing = now;
      const sentAt = now;
      const settle = () => {
        if (this.pingAt === sentAt) this.pingAt = 0;
      };
      this.redis.ping().then(settle, settle);
      return;
    }
    const quiet = now - Math.max(this.heardAt, this.pingAt);
    if (quiet >= TEARDOWN_MS + this.slackMs) {
      this.pingAt = 0;
      abort(this.redis.stream, new Error(`no answer from Redis in ${quiet} ms`)); // ioredis reconnects
    } else if (quiet >= SILENT_MS + this.slackMs && !this.silent) {
      this.setSilent(true);
    }
  }

  setSilent(silent) {
    this.silent = silent;
    this.changed();
  }

  /** Whether it answers: ready and not silent, or, not connected, heard from within SILENT_MS (it is connecting again). */
  answering(now) {
    if (this.redis.status === 'ready') return !this.silent;
    return now - this.heardAt < SILENT_MS + this.slackMs;
  }

  stop() {
    this.redis.off('connect', this.connected);
    this.stream?.off('data', this.heard);
  }
}

/**
 * Emits 'down' when the first watched connection stops answering and 'up'
 * when all of them answer again; the outage is logged once each way (one
 * unreachable from the start, once it fails).
 */
export class Liveness extends EventEmitter {
  /**
   * @param {object} options
   * @param {import('pino').Logger} options.log
   * @param {number} options.slackMs how long a reply may be held back on purpose (a WAIT's timeout)
   */
  constructor({ log, slackMs }) {
    super();
    this.log = log;
    this.slackMs = slackMs;
    this.beats = new Map(); // ioredis Redis -> RedisHeartbeat
    this.names = new Map(); // a watched connection (Redis or Cluster) -> its name, for the log
    this.companions = new Map(); // a watched connection -> Map(its shard subscribers' or Sentinels' connections -> RedisHeartbeat)
    this.up = false;
    this.downSince = Date.now();
    this.reason = undefined; // why it is down, once known
    this.logged = false; // the outage's line is written
    this.recheck = (err) => {
      if (err instanceof Error) this.reason ??= err.message;
      this.check();
    };
    // Judged in the check phase, after the poll phase has read what came:
    // a stalled event loop delays the timer and the reads alike, and a
    // judgement made before the reads would take the stall for Redis' silence.
    this.judge = () => this.tick();
    this.timer = setInterval(() => setImmediate(this.judge), TICK_MS);
    this.timer.unref();
  }

  /** Watches a plain (or Sentinel) connection and its Sentinels', or a Cluster and each of its node and shard subscriber connections. */
  watch(name, connection) {
    this.names.set(connection, name);
    this.companions.set(connection, new Map());
    for (const event of EVENTS) connection.on(event, this.recheck);
    if (!isCluster(connection)) {
      if (connection.options.sentinels) checkSentinelConnections(connection);
      return this.beat(connection);
    }
    connection.on('+node', (node) => this.beat(node));
    connection.on('-node', (node) => this.forget(node));
    for (const node of connection.nodes('all')) this.beat(node);
  }

  /**
   * Whether a watched connection can take a command now: connected, not
   * silent, and under Sentinel one of its Sentinels answering (a Cluster:
   * none of its nodes and shard subscribers silent).
   */
  answering(connection) {
    return this.trouble(connection, Date.now()) === undefined;
  }

  /** Why a watched connection cannot take a command now ('disconnected', 'silent', 'no Sentinel'), or undefined. */
  trouble(connection, now) {
    if (connection.status !== 'ready') return 'disconnected';
    const companions = [...(this.companions.get(connection)?.values() ?? [])];
    if (isCluster(connection)) {
      return connection.nodes('all').some((node) => this.beats.get(node)?.silent) || companions.some((beat) => beat.silent) ? 'silent' : undefined;
    }
    if (this.beats.get(connection)?.silent) return 'silent';
    if (companions.length > 0 && !companions.some((beat) => beat.answering(now))) return 'no Sentinel';
    return undefined;
  }

  /** Starts a heartbeat on each connection that came with `connection` since the last tick, and stops those of the ones gone. */
  follow(connection) {
    const beats = this.companions.get(connection);
    const cluster = isCluster(connection);
    if (!cluster && !connection.options.sentinels) return;
    const now = new Set(cluster ? shardSubscriberConnections(connection) : sentinelConnectionsOf(connection));
    for (const [redis, beat] of beats) {
      if (now.has(redis)) continue;
      beat.stop();
      beats.delete(redis);
    }
    for (const redis of now) {
      if (!beats.has(redis)) beats.set(redis, new RedisHeartbeat(redis, 0, this.recheck)); // no WAIT runs on these
    }
  }

  /** Logs a Sentinel that stopped answering, once, and once when it answers again. */
  tellSentinel(beat, now) {
    const answers = beat.answering(now);
    if (answers === beat.answered) return;
    beat.answered = answers;
    const sentinel = `${beat.redis.options.host}:${beat.redis.options.port}`;
    if (answers) this.log.info({ sentinel }, 'redis engine: a Sentinel answers again');
    else this.log.warn({ sentinel }, 'redis engine: a Sentinel does not answer; failovers are heard through the others');
  }

  beat(redis) {
    if (!this.beats.has(redis)) this.beats.set(redis, new RedisHeartbeat(redis, this.slackMs, this.recheck));
  }

  forget(redis) {
    this.beats.get(redis)?.stop();
    this.beats.delete(redis);
    this.check();
  }

  tick() {
    const now = Date.now();
    for (const connection of this.names.keys()) this.follow(connection);
    for (const beat of this.beats.values()) beat.tick(now);
    for (const [connection, beats] of this.companions) {
      for (const beat of beats.values()) {
        beat.tick(now);
        if (!isCluster(connection)) this.tellSentinel(beat, now);
      }
    }
    this.check(); // a Sentinel that stays away is judged by time, not by an event
  }

  check() {
    const now = Date.now();
    const troubles = new Map();
    for (const connection of this.names.keys()) {
      const trouble = this.trouble(connection, now);
      if (trouble !== undefined) troubles.set(connection, trouble);
    }
    const down = [...troubles.keys()];
    if (down.length === 0) {
      if (this.up) return;
      this.up = true;
      if (this.logged) this.log.info({ downMs: Date.now() - this.downSince }, 'redis engine: Redis answers again; publishes accepted');
      this.logged = false;
      this.reason = undefined;
      this.emit('up');
      return;
    }
    if (this.up) {
      this.up = false;
      this.downSince = Date.now();
      this.emit('down');
      const seen = new Set(troubles.values());
      if (seen.has('silent')) this.reason = `no answer within ${SILENT_MS + this.slackMs} ms`;
      else if (seen.has('no Sentinel')) this.reason = 'no Sentinel answers';
      this.reason ??= 'disconnected';
    }
    if (this.logged || this.reason === undefined) return; // still connecting at start: said once it fails
    this.logged = true;
    const connections = down.map((connection) => this.names.get(connection));
    this.log.error({ connections, reason: this.reason }, 'redis engine: Redis unreachable; publishes refused until it is back');
  }

  stop() {
    clearInterval(this.timer);
    for (const connection of this.names.keys()) for (const event of EVENTS) connection.off(event, this.recheck);
    for (const beat of this.beats.values()) beat.stop();
    this.beats.clear();
    for (const beats of this.companions.values()) for (const beat of beats.values()) beat.stop();
    this.companions.clear();
  }
}

/**
 * Closes a silent connection with a reset: a plain close would leave the
 * kernel retransmitting the commands written into the silence, and Redis
 * would run them once the partition heals, their answers lost.
 */
function abort(stream, err) {
  if (stream === undefined) return;
  try {
    stream.resetAndDestroy(); // TCP only
  } catch {
    stream.destroy(err);
  }
}

function isCluster(connection) {
  return typeof connection.nodes === 'function';
}
