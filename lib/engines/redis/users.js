// Connection counts across gateway nodes, per user (--max-conns-per-user) or
// per Pusher app (its maxConnections), each under its own keys (the script
// and its invariant: ./users.lua). lib/primary/counts.js keeps this node's
// exact counts and asks here before admitting; this mirrors them into Redis. While Redis is
// unreachable a node admits against its own count only, and writes all its
// counts again once Redis is back.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';

const NODE_TTL_S = 30;
const BEAT_MS = 5000;

/** @implements {import('../index.js').UserCounts} */
export class RemoteUsers {
  /**
   * @param {import('ioredis').Redis} redis the command connection
   * @param {number} cap --max-conns-per-user, or each admit()'s own
   * @param {string} [scope] what is counted: its keys are gw:{#<scope>}:…
   */
  constructor(redis, cap, scope = 'users') {
    this.redis = redis;
    this.cap = String(cap);
    this.prefix = `gw:{#${scope}}:`;
    this.nodes = `${this.prefix}nodes`; // the script's key (./users.lua)
    this.node = randomUUID();
    this.ttl = String(NODE_TTL_S);
    this.counts = undefined; // this node's Map user -> count, given by attach()
    redis.defineCommand('gw_users', { numberOfKeys: 1, lua: readFileSync(new URL('./users.lua', import.meta.url), 'utf8') });
    this.beater = setInterval(() => this.beat(), BEAT_MS);
    this.beater.unref();
  }

  /** Starts mirroring `counts`, now and whenever Redis is back. */
  attach(counts) {
    this.counts = counts;
    this.redis.on('ready', () => this.resync());
    if (this.redis.status === 'ready') this.resync();
  }

  /**
   * @param {number} count this node's count for the user, the new connection included
   * @param {number} [cap] this key's own cap
   * @returns {Promise<boolean>} whether the sum over every node stays within the cap
   */
  async admit(user, count, cap) {
    if (this.redis.status !== 'ready') return true; // this node's own count was checked
    try {
      return (await this.redis.gw_users(this.nodes, 'admit', this.node, this.ttl, user, String(count), cap === undefined ? this.cap : String(cap))) === 1;
    } catch {
      return true; // as if unreachable; resynced when it is back
    }
  }

  /** This node's count for the user changed (a connection closed, an admission undone). */
  mirror(user, count) {
    if (this.redis.status !== 'ready') return;
    this.redis.gw_users(this.nodes, 'set', this.node, this.ttl, user, String(count)).catch(() => {});
  }

  beat() {
    if (this.redis.status !== 'ready') return;
    this.redis.gw_users(this.nodes, 'beat', this.node, this.ttl).catch(() => {});
  }

  async resync() {
    try {
      await this.redis.del(`${this.prefix}${this.node}`);
      this.beat();
      for (const [user, count] of this.counts) this.mirror(user, count);
    } catch {
      // gone again: the next ready resyncs
    }
  }

  stop() {
    clearInterval(this.beater);
  }
}
