// The Redis engine's publishes, in batches: the publishes of one turn of the
// event loop leave as one pipeline per Redis master (one for a single Redis
// or under Sentinel, one per shard under Cluster), so a publish costs a
// script call and a share of one round trip. Under --redis-wait-replicas N
// the pipeline ends with one WAIT: its publishes are acknowledged only when N
// replicas hold them all, and refused (`unavailable`) otherwise, since a
// failover could lose them. A refused publish may still have been stored:
// a retry with the same idempotency key is what makes that safe.
//
// Under WAIT the live messages leave only once the replicas hold them: the
// script stores without PUBLISHing, and a second pipeline PUBLISHes what
// WAIT confirmed, before the acknowledgements. So no node ever delivers a
// message that a failover to a replica could take back (which would start
// the channel over in a new epoch: ../redis.js); a refused one is not
// delivered live (it is in the history, and a later message's gap brings
// it). Two nodes' confirmations may then arrive out of seq order: the
// receiving side puts them back in order (../redis.js, `deliver`).
//
// A pipeline is never sent twice (ioredis re-sends a Cluster pipeline only
// when every command in it was redirected, so none ran). Under Cluster a
// slot migration redirects some publishes of a pipeline (MOVED, ASK,
// TRYAGAIN: a script that did not run): those alone are queued again,
// ioredis's retryDelayOnTryAgain later (after a MOVED, with the slot map
// refreshed), for as long as ioredis itself would redirect one command
// (maxRedirections such delays); the rest of their pipeline is answered as
// it ran. A move still going on after that: refused.
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { slotOf } from './connect.js';
import { IDEMPOTENCY_WINDOW_MS, MAX_IDEMPOTENCY_KEYS } from '../idempotency.js';
import { publishResult } from '../publication.js';
import { requireNumbers } from '../check-options.js';

const REDIRECTED = /^(MOVED|ASK|TRYAGAIN) /;
const LIMITS = [String(IDEMPOTENCY_WINDOW_MS), String(MAX_IDEMPOTENCY_KEYS)];

/** A publish waiting for its pipeline, and for its answer. */
class Queued {
  constructor(tag, publication, epoch, ns, reply) {
    this.tag = tag; // the channel's pub/sub name and its keys' common start
    this.data = publication.data;
    this.exclude = publication.exclude ?? '';
    this.epoch = epoch; // for a sequence that starts with it
    this.historySize = ns.historySize;
    this.historyTtl = ns.historyTtl;
    this.idempotencyKey = publication.idempotencyKey ?? '';
    this.version = publication.version ?? '';
    this.reply = reply;
    this.queuedAt = performance.now(); // when first queued: a redirected one is tried again for a while from then
  }
}

export class RedisPublisher {
  /**
   * @param {object} options
   * @param {import('ioredis').Redis | import('ioredis').Cluster} options.redis the command connection
   * @param {boolean} options.cluster whether `redis` is a Cluster: one pipeline per master
   * @param {number} options.waitReplicas 0: no WAIT
   * @param {number} options.waitTimeout ms
   * @param {(seconds: number, count: number) => void} options.observe gets each pipeline's latency
   */
  constructor({ redis, cluster, waitReplicas, waitTimeout, observe }) {
    requireNumbers('RedisPublisher', { waitReplicas, waitTimeout }, { waitReplicas: 0, waitTimeout: 1 });
    this.redis = redis;
    this.cluster = cluster;
    this.publishCommand = cluster ? 'spublish' : 'publish';
    this.scriptPublishes = waitReplicas === 0 ? this.publishCommand : ''; // under WAIT, answer() publishes
    this.waitReplicas = waitReplicas;
    this.waitTimeout = String(waitTimeout);
    this.observe = observe;
    this.queued = [];
    this.waiting = 0; // publishes queued or sent, not yet answered
    this.idempotencyDropped = 0; // keys the script dropped to stay within its cap
    this.flush = this.flush.bind(this);
    const lua = readFileSync(new URL('./publish.lua', import.meta.url), 'utf8');
    redis.defineCommand('gw_publish', { numberOfKeys: 4, lua });
  }

  /**
   * Queues the publish for this turn's pipeline; `reply` is answered with
   * its result (null: refused).
   * @param {string} tag the channel's pub/sub name
   * @param {import('../publication.js').Publication} publication read now, not kept
   * @param {string} epoch for a sequence that starts with this publish
   * @param {{historySize: number, historyTtl: number}} ns the channel's namespace
   * @param {import('../publication.js').PublishReply} [reply]
   */
  publish(tag, publication, epoch, ns, reply) {
    if (this.queued.length === 0) setImmediate(this.flush);
    this.queued.push(new Queued(tag, publication, epoch, ns, reply));
    this.waiting++;
  }

  flush() {
    const queued = this.queued;
    this.queued = [];
    if (!this.cluster) return this.send(queued);
    // One pipeline per master: a Cluster pipeline must stay on one node.
    const byNode = new Map();
    for (const publish of queued) {
      const node = this.redis.slots[slotOf(publish.tag)]?.[0];
      let group = byNode.get(node);
      if (group === undefined) byNode.set(node, (group = []));
      group.push(publish);
    }
    for (const group of byNode.values()) this.send(group);
  }

  send(queued) {
    const pipeline = this.redis.pipeline();
    const { scriptPublishes } = this;
    for (const { tag, data, exclude, epoch, historySize, historyTtl, idempotencyKey, version } of queued) {
      const keys = [`${tag}:state`, `${tag}:history`, `${tag}:idem`, `${tag}:idemt`];
      pipeline.gw_publish(...keys, data, epoch, historySize, historyTtl, tag, idempotencyKey, version, ...LIMITS, scriptPublishes, exclude);
    }
    if (this.waitReplicas > 0) pipeline.wait(this.waitReplicas, this.waitTimeout);
    const started = performance.now();
    pipeline.exec().then(
      (results) => this.answer(queued, results, started),
      () => this.answer(queued, undefined, started)
    );
  }

  /**
   * Answers a pipeline's publishes: each its seq and epoch, or null when
   * failed or not replicated in time; under WAIT, once the confirmed ones
   * are published live.
   */
  answer(queued, results, started) {
    const count = queued.length;
    this.waiting -= count;
    const replicated = this.waitReplicas === 0 || (results !== undefined && results[count][1] >= this.waitReplicas);
    if (results !== undefined) this.observe((performance.now() - started) / 1000, count);
    const redirected = [];
    const answers = []; // [publish, result (null: refused)]
    const live = this.scriptPublishes === '' && replicated ? this.redis.pipeline() : undefined;
    const { maxRedirections, retryDelayOnTryAgain } = this.redis.options;
    const since = performance.now() - maxRedirections * retryDelayOnTryAgain;
    for (let n = 0; n < count; n++) {
      const publish = queued[n];
      const [err, reply] = results?.[n] ?? [true];
      const match = err?.message && REDIRECTED.exec(err.message);
      if (match && publish.queuedAt > since) {
        if (match[1] === 'MOVED') this.redis.refreshSlotsCache();
        redirected.push(publish);
        continue;
      }
      if (!err) this.idempotencyDropped += reply[3];
      // reply: [seq, epoch, skipped or null, keys dropped]; a skipped publish stored nothing, so sends nothing
      const result = err || !replicated ? null : publishResult(reply[0], reply[1], reply[2] ?? undefined);
      if (live !== undefined && result !== null && result.skipped === undefined) live[this.publishCommand](publish.tag, liveMessage(result, publish));
      if (publish.reply !== undefined) answers.push([publish, result]);
    }
    if (redirected.length > 0) this.again(redirected);
    const settle = () => {
      for (const [{ reply }, result] of answers) reply.answered(result);
    };
    // Whatever the live publish's outcome: the message is stored on the replicas, and a subscriber that missed it catches up.
    if (live?.length > 0) live.exec().then(settle, settle);
    else settle();
  }

  /** Publishes that never ran, for a later pipeline (the slot's owner may have changed meanwhile). */
  again(redirected) {
    this.waiting += redirected.length;
    setTimeout(() => {
      if (this.queued.length === 0) setImmediate(this.flush);
      this.queued.push(...redirected);
    }, this.redis.options.retryDelayOnTryAgain);
  }
}

/**
 * A live message as publish.lua publishes it: `<seq> <epoch> <data>`, or
 * `<seq> <epoch>/<exclude> <data>` with a client to leave out (an epoch is
 * base 36, so the slash ends it).
 */
function liveMessage({ seq, epoch }, { data, exclude }) {
  return exclude === '' ? `${seq} ${epoch} ${data}` : `${seq} ${epoch}/${exclude} ${data}`;
}
