// The Redis engine's publishes, in batches: the publishes of one turn of the
// event loop leave as one pipeline per Redis master (one for a single Redis
// or under Sentinel, one per shard under Cluster), and in it as few calls of
// the publish script as can carry them: one call per BATCH publishes (under
// Cluster, per slot: a script's keys must share one). The script runs a
// call's publishes in their order (./publish.lua), so a channel's publishes
// take their seqs in the order they came; one publish that Redis fails is
// refused alone. Under --redis-wait-replicas N the pipeline ends with one
// WAIT: its publishes are acknowledged only when N replicas hold them all,
// and refused (`unavailable`) otherwise, since a failover could lose them. A
// refused publish may still have been stored: a retry with the same
// idempotency key is what makes that safe.
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
// The script is called by its SHA1 (EVALSHA), loaded whenever the command
// connection becomes ready. A Redis without it (restarted behind a
// connection that did not notice, a SCRIPT FLUSH) answers NOSCRIPT and runs
// nothing: those publishes are held, new ones too, until every pipeline
// already sent is answered; then the script is loaded again and they go
// first, in their order, then the rest (one warning says so). A publish
// refused NOSCRIPT a second time is refused to its client.
//
// A pipeline is never sent twice (ioredis re-sends a Cluster pipeline only
// when every command in it was redirected, so none ran). Under Cluster a
// slot migration redirects some calls of a pipeline (MOVED, ASK, TRYAGAIN:
// a script that did not run): their publishes alone are queued again,
// ioredis's retryDelayOnTryAgain later (after a MOVED, with the slot map
// refreshed), for as long as ioredis itself would redirect one command
// (maxRedirections such delays); the rest of their pipeline is answered as
// it ran. A move still going on after that: refused.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { slotOf } from './connect.js';
import { MAX_IDEMPOTENCY_KEYS, windowOf } from '../idempotency.js';
import { publishResult } from '../publication.js';
import { requireNumbers } from '../check-options.js';

/** Publishes per script call: a call holds Redis for all of them (a few µs each), so it stays short. */
const BATCH = 256;
const REPLY_PER_PUBLISH = 3; // publish.lua's
const LUA = readFileSync(new URL('./publish.lua', import.meta.url), 'utf8');
const SHA = createHash('sha1').update(LUA).digest('hex');
const REDIRECTED = /^(MOVED|ASK|TRYAGAIN) /;
const NOSCRIPT = /^NOSCRIPT/;
const KEYS_HELD = String(MAX_IDEMPOTENCY_KEYS);
const REFUSALS_LOGGED_EVERY_MS = 1000;

/** A publish waiting for its pipeline, and for its answer. */
class Queued {
  constructor(tag, publication, epoch, ns, reply) {
    this.tag = tag; // the channel's pub/sub name and its keys' common start
    this.data = publication.data;
    this.exclude = publication.exclude ?? '';
    this.epoch = epoch; // for a sequence that starts with it
    this.historySize = ns.historySize;
    this.historyTtl = ns.historyTtl;
    this.idempotencyWindowMs = windowOf(ns);
    this.idempotencyKey = publication.idempotencyKey ?? '';
    this.version = publication.version ?? '';
    this.reply = reply;
    this.queuedAt = performance.now(); // when first queued: a redirected one is tried again for a while from then
    this.resent = false; // sent again after a NOSCRIPT
  }
}

export class RedisPublisher {
  /**
   * @param {object} options
   * @param {import('ioredis').Redis | import('ioredis').Cluster} options.redis the command connection
   * @param {boolean} options.cluster whether `redis` is a Cluster: one pipeline per master, one call per slot
   * @param {number} options.waitReplicas 0: no WAIT
   * @param {number} options.waitTimeout ms
   * @param {(seconds: number, count: number) => void} options.observe gets each pipeline's latency
   * @param {import('pino').Logger} options.log
   */
  constructor({ redis, cluster, waitReplicas, waitTimeout, observe, log }) {
    requireNumbers('RedisPublisher', { waitReplicas, waitTimeout }, { waitReplicas: 0, waitTimeout: 1 });
    this.redis = redis;
    this.cluster = cluster;
    this.log = log;
    this.publishCommand = cluster ? 'spublish' : 'publish';
    this.scriptPublishes = waitReplicas === 0 ? this.publishCommand : ''; // under WAIT, answer() publishes
    this.waitReplicas = waitReplicas;
    this.waitTimeout = String(waitTimeout);
    this.observe = observe;
    this.queued = [];
    this.waiting = 0; // publishes queued or sent, not yet answered
    this.sent = 0; // pipelines sent, not yet answered
    this.missing = []; // publishes Redis answered NOSCRIPT: held, with every new one, until the script is loaded again
    this.idempotencyDropped = 0; // keys the script dropped to stay within its cap
    this.refusals = { loggedAt: -Infinity, since: 0 }; // publishes Redis refused, logged at most once a second
    this.flush = this.flush.bind(this);
    redis.on('ready', () => this.load().catch(() => {})); // a failure here is a NOSCRIPT later, handled there
  }

  /**
   * Queues the publish for this turn's pipeline; `reply` is answered with
   * its result (null: refused).
   * @param {string} tag the channel's pub/sub name
   * @param {import('../../core/seams.js').Publication} publication read now, not kept
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
    if (this.missing.length > 0 || this.queued.length === 0) return; // held until the script is back (reload)
    const queued = this.queued;
    this.queued = [];
    if (!this.cluster) return this.send(callsOf(queued, BATCH));
    // One pipeline per master (a Cluster pipeline stays on one node), one call per slot.
    const bySlot = new Map();
    for (const publish of queued) {
      const slot = slotOf(publish.tag);
      let group = bySlot.get(slot);
      if (group === undefined) bySlot.set(slot, (group = []));
      group.push(publish);
    }
    const byNode = new Map();
    for (const [slot, group] of bySlot) {
      const node = this.redis.slots[slot]?.[0];
      let calls = byNode.get(node);
      if (calls === undefined) byNode.set(node, (calls = []));
      calls.push(...callsOf(group, BATCH));
    }
    for (const calls of byNode.values()) this.send(calls);
  }

  /** One pipeline: a script call per batch of publishes, then the WAIT if any. */
  send(calls) {
    const pipeline = this.redis.pipeline();
    for (const call of calls) {
      const [keys, fields] = this.argumentsOf(call);
      pipeline.evalsha(SHA, keys.length, ...keys, KEYS_HELD, this.scriptPublishes, ...fields);
    }
    if (this.waitReplicas > 0) pipeline.wait(this.waitReplicas, this.waitTimeout);
    const started = performance.now();
    this.sent++;
    pipeline.exec().then(
      (results) => this.answer(calls, results, started),
      () => this.answer(calls, undefined, started)
    );
  }

  /**
   * publish.lua's keys and arguments for a batch: each channel's keys and
   * fields once, then each publish's, naming its channel by its place.
   * @returns {[string[], Array<string | number>]} the keys, and the fields after the keys held and the publish command
   */
  argumentsOf(call) {
    const keys = [];
    const channelFields = [];
    const publishFields = [];
    const places = new Map(); // tag -> 1 for the first channel
    for (const { tag, data, exclude, epoch, historySize, historyTtl, idempotencyWindowMs, idempotencyKey, version } of call) {
      let place = places.get(tag);
      if (place === undefined) {
        places.set(tag, (place = places.size + 1));
        keys.push(`${tag}:state`, `${tag}:history`, `${tag}:idem`, `${tag}:idemt`);
        channelFields.push(tag, epoch, historySize, historyTtl, idempotencyWindowMs);
      }
      publishFields.push(place, data, idempotencyKey, version, exclude);
    }
    return [keys, channelFields.concat(publishFields)];
  }

  /**
   * Answers a pipeline's publishes: each its seq and epoch, or null when
   * failed or not replicated in time; under WAIT, once the confirmed ones
   * are published live. Those that did not run (redirected, NOSCRIPT) go again.
   */
  answer(calls, results, started) {
    this.sent--;
    const count = calls.length;
    let publishes = 0;
    for (const call of calls) publishes += call.length;
    this.waiting -= publishes;
    const replicated = this.waitReplicas === 0 || (results !== undefined && results[count][1] >= this.waitReplicas);
    if (results !== undefined) this.observe((performance.now() - started) / 1000, publishes);
    const redirected = [];
    const answers = []; // [publish, result (null: refused)]
    const live = this.scriptPublishes === '' && replicated ? this.redis.pipeline() : undefined;
    const { maxRedirections, retryDelayOnTryAgain } = this.redis.options;
    const since = performance.now() - maxRedirections * retryDelayOnTryAgain;
    for (let n = 0; n < count; n++) {
      const call = calls[n];
      const [err, reply] = results?.[n] ?? [true];
      if (!err) this.idempotencyDropped += reply.at(-1);
      const message = err?.message;
      if (message !== undefined && NOSCRIPT.test(message)) {
        this.hold(call, answers);
        continue;
      }
      const match = message && REDIRECTED.exec(message);
      for (let i = 0; i < call.length; i++) {
        const publish = call[i];
        if (match && publish.queuedAt > since) {
          if (match[1] === 'MOVED') this.redis.refreshSlotsCache();
          redirected.push(publish);
          continue;
        }
        if (message !== undefined) this.refused(1, message);
        const result = err || !replicated ? null : this.resultOf(reply, i * REPLY_PER_PUBLISH);
        if (live !== undefined && result !== null && result.skipped === undefined) live[this.publishCommand](publish.tag, liveMessage(result, publish));
        if (publish.reply !== undefined) answers.push([publish, result]);
      }
    }
    if (redirected.length > 0) this.again(redirected);
    if (this.missing.length > 0 && this.sent === 0) this.reload();
    const settle = () => {
      for (const [{ reply }, result] of answers) reply.answered(result);
    };
    // Whatever the live publish's outcome: the message is stored on the replicas, and a subscriber that missed it catches up.
    if (live?.length > 0) live.exec().then(settle, settle);
    else settle();
  }

  /** One publish's part of its call's reply: [seq, epoch, '' or skipped or 'failed']; null for a failed one. */
  resultOf(reply, at) {
    const status = reply[at + 2];
    if (status === 'failed') {
      this.refused(1, reply[at + 1]);
      return null;
    }
    return publishResult(reply[at], reply[at + 1], status === '' ? undefined : status);
  }

  /** A call Redis answered NOSCRIPT (nothing in it ran): held for the reload, or refused if it already came back once. */
  hold(call, answers) {
    for (const publish of call) {
      if (!publish.resent) {
        publish.resent = true;
        this.missing.push(publish);
        this.waiting++;
      } else if (publish.reply !== undefined) answers.push([publish, null]);
    }
  }

  /** Loads the script again, then sends what NOSCRIPT held back, first and in its order, then what came meanwhile. */
  reload() {
    const missing = this.missing;
    this.log.warn({ publishes: missing.length }, 'redis engine: Redis did not have the publish script (NOSCRIPT: restarted, or SCRIPT FLUSH); loading it again and sending those publishes again, in order');
    const resume = () => {
      this.missing = [];
      this.queued = missing.concat(this.queued);
      this.flush();
    };
    this.load().then(resume, (err) => {
      this.log.warn({ err: err.message, publishes: missing.length }, 'redis engine: could not load the publish script again; those publishes go again, and a second NOSCRIPT refuses them');
      resume();
    });
  }

  /** SCRIPT LOAD on the master (on every master under Cluster). */
  load() {
    const masters = this.cluster ? this.redis.nodes('master') : [this.redis];
    return Promise.all(masters.map((master) => master.script('LOAD', LUA)));
  }

  /** Logs publishes Redis refused (an error it answered), at most one line a second, with the count since the last. */
  refused(count, message) {
    const { refusals } = this;
    refusals.since += count;
    const now = performance.now();
    if (now - refusals.loggedAt < REFUSALS_LOGGED_EVERY_MS) return;
    this.log.warn({ publishes: refusals.since, error: message }, 'redis engine: Redis refused publishes; their clients were told unavailable');
    refusals.loggedAt = now;
    refusals.since = 0;
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

/** `queued` cut into script calls of at most `size`, in its order. */
function callsOf(queued, size) {
  if (queued.length <= size) return [queued];
  const calls = [];
  for (let at = 0; at < queued.length; at += size) calls.push(queued.slice(at, at + size));
  return calls;
}

/**
 * A live message as publish.lua publishes it: `<seq> <epoch> <data>`, or
 * `<seq> <epoch>/<exclude> <data>` with a client to leave out (an epoch is
 * base 36, so the slash ends it).
 */
function liveMessage({ seq, epoch }, { data, exclude }) {
  return exclude === '' ? `${seq} ${epoch} ${data}` : `${seq} ${epoch}/${exclude} ${data}`;
}
