// Occupancy across gateway nodes (the script and its invariant:
// ./occupancy.lua). The engine reports this node's own transitions (a
// channel's first route here, its last); they go to Redis in order, a batch
// per turn of the event loop, and what the script answers as cluster-wide
// transitions is announced here. Every RENEW_MS the node renews all the
// channels it routes (and sweeps lapsed entries of crashed nodes); a
// transition lost while Redis was unreachable heals so: a channel routed
// here is added back at the next renewal, one no longer routed lapses within
// ENTRY_TTL_MS.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';

/** ms an entry lives without renewal: how late a crashed node's channels are vacated, at most (plus RENEW_MS). */
export const ENTRY_TTL_MS = 15000;
const RENEW_MS = 5000;
const PER_CALL = 500; // channels per script call when renewing
const SWEEP = '1000'; // lapsed entries removed per call: a crashed node's many channels take a call per thousand
const KEYS = ['gw:{#occupancy}:routes', 'gw:{#occupancy}:nodes'];

export class RemoteOccupancy {
  /**
   * @param {import('ioredis').Redis | import('ioredis').Cluster} redis the command connection
   * @param {() => Iterable<string>} routed the channels this node routes now
   * @param {(channel: string, occupied: boolean) => void} listener
   * @param {import('pino').Logger} log
   */
  constructor(redis, routed, listener, log) {
    this.redis = redis;
    this.routed = routed;
    this.listener = listener;
    this.log = log;
    this.node = randomUUID();
    this.ttl = String(ENTRY_TTL_MS);
    this.pending = []; // '+' | '-', channel, ... for the next call
    this.failing = false;
    redis.defineCommand('gw_occupancy', { numberOfKeys: 2, lua: readFileSync(new URL('./occupancy.lua', import.meta.url), 'utf8') });
    this.renewer = setInterval(() => this.renew(), RENEW_MS);
    this.renewer.unref();
  }

  /** This node routes `channel` now (occupied) or no more. */
  changed(channel, occupied) {
    if (this.pending.length === 0) queueMicrotask(() => this.flush());
    this.pending.push(occupied ? '+' : '-', channel);
  }

  flush() {
    const ops = this.pending;
    this.pending = [];
    this.call(ops);
  }

  renew() {
    const ops = [];
    for (const channel of this.routed()) {
      ops.push('+', channel);
      if (ops.length === 2 * PER_CALL) this.call(ops.splice(0));
    }
    this.call(ops); // with none: sweeps only
  }

  call(ops) {
    if (this.redis.status !== 'ready') return; // lost: the renewals heal it
    this.redis.gw_occupancy(...KEYS, this.node, this.ttl, SWEEP, ...ops).then(
      (changes) => {
        if (this.failing) this.log.info('webhooks: occupancy in Redis reachable again');
        this.failing = false;
        for (let i = 1; i < changes.length; i += 2) this.listener(changes[i], changes[i + 1] === 1);
        if (String(changes[0]) === SWEEP) this.call([]); // more may have lapsed
      },
      (err) => {
        if (!this.failing) this.log.warn({ err: err.message }, 'webhooks: occupancy in Redis failed; renewals will heal it');
        this.failing = true;
      }
    );
  }

  stop() {
    clearInterval(this.renewer);
  }
}
