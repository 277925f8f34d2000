// The Redis engine's pub/sub side, one shape for every topology (./connect.js):
// subscribe(names), unsubscribe(names), ping(names) (settles once every
// message published on those names before it has arrived), and the events
// 'message' (name, text) and 'lost' (the subscriptions may have dropped:
// the engine subscribes again and catches its routes up from the history).
import { ErrorCode, GatewayError } from '../../core/errors.js';
import { checkShardSubscribers, shardSubscriberOf } from '../../runtime/internals.js';
import { EventEmitter } from 'node:events';
import { slotOf } from './connect.js';

const CHUNK = 1000; // names per SUBSCRIBE

/** A single Redis, or the master behind Sentinel: one subscriber connection. */
export class PlainSubscriber extends EventEmitter {
  /** @param {import('ioredis').Redis} redis a connection for pub/sub only */
  constructor(redis) {
    super();
    this.redis = redis;
    redis.on('message', (name, text) => this.emit('message', name, text));
    // A new connection subscribes to nothing.
    redis.on('ready', () => this.emit('lost'));
  }

  async subscribe(names) {
    for (let i = 0; i < names.length; i += CHUNK) await this.redis.subscribe(...names.slice(i, i + CHUNK));
  }

  unsubscribe(names) {
    for (let i = 0; i < names.length; i += CHUNK) this.redis.unsubscribe(...names.slice(i, i + CHUNK)).catch(() => {});
  }

  ping() {
    return this.redis.ping();
  }
}

/**
 * Redis Cluster: SSUBSCRIBE through ioredis's sharded subscribers, one
 * connection per master. ioredis replaces a shard's subscriber after a
 * failover, and resubscribes a migrated slot's channels at its new owner
 * (the old one's unsolicited `sunsubscribe` makes it refresh the slot map),
 * then says 'subscribersReady'; what was published meanwhile never arrived,
 * so that is 'lost' too.
 */
export class ShardedSubscriber extends EventEmitter {
  /** @param {import('ioredis').Cluster} cluster */
  constructor(cluster) {
    super();
    this.cluster = cluster;
    checkShardSubscribers(cluster); // an internal of ioredis (../../internals.js): checked here, once
    cluster.on('smessage', (name, text) => this.emit('message', name, text));
    cluster.on('ready', () => this.emit('lost'));
    cluster.on('subscribersReady', () => this.emit('lost'));
  }

  /** One SSUBSCRIBE per name: a sharded subscribe must stay within one slot. */
  async subscribe(names) {
    await Promise.all(names.map((name) => this.cluster.ssubscribe(name)));
  }

  unsubscribe(names) {
    for (const name of names) this.cluster.sunsubscribe(name).catch(() => {});
  }

  /** A PING on each shard subscriber that carries one of `names`. */
  async ping(names) {
    const connections = new Set();
    for (const name of names) connections.add(shardSubscriberOf(this.cluster, slotOf(name)));
    await Promise.all([...connections].map((redis) => (redis ? redis.ping() : Promise.reject(new GatewayError(ErrorCode.UNAVAILABLE, 'no subscriber for a shard')))));
  }
}
