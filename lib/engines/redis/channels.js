// The Redis engine's channels on this node: each one its workers hold is
// SUBSCRIBEd, and its routes get its messages in seq order, joined to a
// subscribe's read exactly. The channel is SUBSCRIBEd first; then ./read.lua
// reads its seq S (and the history after `since`) in one atomic step; then a
// PING on the subscriber connection comes back after every message published
// before that read, so every message up to S has arrived. Meanwhile the
// channel's live messages are held; then its routes get the held messages up
// to S, the subscribe answers (at S), and the held messages after S, in that
// order (lib/worker/relay.js says why). A message ahead of the next seq
// waits a moment for its predecessors (under --redis-wait-replicas two nodes'
// confirmations race), then they are read from the history. After the
// subscriptions drop, every channel is SUBSCRIBEd and read again, its
// routes get what they missed, in order and once, and then `resubscribed`
// says so (the presence reads the channel's members again).
import { readFileSync } from 'node:fs';
import { Op } from '../../core/ipc.js';
import { ErrorCode, GatewayError } from '../../core/errors.js';
import { addRoute, pushAll, removeRoute } from '../routes.js';
import { subscribeReply } from '../subscribe-reply.js';
import { messageOp } from '../publication.js';
import { newEpoch, tagOf } from './keys.js';

const RETRY_MS = 500;
const GAP_WAIT_MS = 50; // a message ahead of the next seq waits this long for its predecessors, then they are read

class RedisChannel {
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
    this.resubscribed = false; // SUBSCRIBEd again after the subscriptions dropped: told once its read is in
  }
}

/** A live message's entry when it names a client to leave out; otherwise the entry is its data. */
class Excluded {
  constructor(data, exclude) {
    this.data = data;
    this.exclude = exclude;
  }
}

export class RedisChannels {
  /**
   * @param {object} options
   * @param {import('ioredis').Redis | import('ioredis').Cluster} options.redis the command connection
   * @param {import('./subscriber.js').PlainSubscriber | import('./subscriber.js').ShardedSubscriber} options.sub
   * @param {boolean} options.cluster
   * @param {number} options.waitReplicas replicas that must hold what a read saw (0: none)
   * @param {number} options.waitTimeout ms
   * @param {() => boolean} options.answering whether both connections answer now (./liveness.js)
   * @param {(channel: string) => import('../../core/namespaces.js').Namespace} options.namespaceOf
   * @param {(channel: string, occupied: boolean) => void} options.routed a channel got its first route here, or lost its last
   * @param {(channel: string, lost: boolean) => void} options.resubscribed a channel is SUBSCRIBEd again after the subscriptions dropped, and caught up
   *   (`lost`: Redis no longer held its keys, as after a restart with no data)
   * @param {import('pino').Logger} options.log
   */
  constructor({ redis, sub, cluster, waitReplicas, waitTimeout, answering, namespaceOf, routed, resubscribed, log }) {
    this.redis = redis;
    this.sub = sub;
    this.cluster = cluster;
    this.waitReplicas = waitReplicas;
    this.waitTimeout = waitTimeout;
    this.answering = answering;
    this.namespaceOf = namespaceOf;
    this.routed = routed;
    this.resubscribed = resubscribed;
    this.log = log;
    this.channels = new Map(); // name -> RedisChannel
    this.toSubscribe = new Set();
    this.toUnsubscribe = new Set();
    this.toRead = new Set();
    this.cycling = false;
    const lua = readFileSync(new URL('./read.lua', import.meta.url), 'utf8');
    redis.defineCommand('gw_read', { numberOfKeys: 2, lua });
  }

  /** @returns {RedisChannel | undefined} the channel's state here: its routes, where it stands */
  get(channel) {
    return this.channels.get(channel);
  }

  get size() {
    return this.channels.size;
  }

  /** @returns {string[]} the channels with a route here */
  withRoutes() {
    return [...this.channels].filter(([, state]) => state.routes !== undefined).map(([channel]) => channel);
  }

  /** `answer` is called once the read is in order with the live messages. */
  subscribe(channel, route, since, answer) {
    let state = this.channels.get(channel);
    if (state === undefined) {
      state = new RedisChannel();
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
    if (removeRoute(state, route)) this.routed(channel, false);
    // Asked after the subscribe: answered all the same, and not routed.
    for (const request of state.waiting) if (request.route === route) request.route = undefined;
    for (const request of state.reading ?? []) if (request.route === route) request.route = undefined;
    this.forgetIfUnused(channel, state);
  }

  detach(route) {
    for (const [channel, state] of this.channels) {
      if (removeRoute(state, route)) this.routed(channel, false);
      state.waiting = state.waiting.filter((request) => request.route !== route);
      if (state.reading !== undefined) state.reading = state.reading.filter((request) => request.route !== route);
      this.forgetIfUnused(channel, state);
    }
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

  /** A message PUBLISHed on a channel held here (`<seq> <epoch>[/<exclude>] <data>`, ./publisher.js). */
  received(channel, message) {
    const state = this.channels.get(channel);
    if (state === undefined) return;
    const space = message.indexOf(' ');
    const seq = Number(message.slice(0, space));
    const dataStart = message.indexOf(' ', space + 1) + 1;
    // Not from publish.lua (the data itself is trusted: whoever can write to Redis owns the channels).
    if (!(seq > 0) || dataStart === 0) return;
    const dataJson = message.slice(dataStart);
    // `<epoch>/<exclude>`: a client to leave out
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
      while (this.answering() && this.toSubscribe.size + this.toUnsubscribe.size + this.toRead.size > 0) {
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
    const ns = this.namespaceOf(channel);
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
    const lost = state.epoch !== undefined && epoch !== state.epoch;
    if (epoch !== state.epoch) this.restart(channel, state, epoch);
    if (state.routes !== undefined) for (const [s, data] of history) this.send(channel, state, s, data);
    for (let i = 0; i < held.length && held[i] <= seq; i += 2) this.send(channel, state, held[i], held[i + 1]);
    this.flushAhead(channel, state);
    state.seq = Math.max(state.seq, seq);
    const latest = this.namespaceOf(channel).latest;
    for (const { route, since, answer } of requests) {
      answer(subscribeReply(epoch, seq, since, (after) => replayAfter(history, after, seq), latest));
      if (route !== undefined && addRoute(state, route)) this.routed(channel, true);
    }
    for (let i = 0; i < held.length; i += 2) if (held[i] > seq) this.deliver(channel, state, held[i], held[i + 1]);
    if (state.resubscribed) {
      state.resubscribed = false;
      this.resubscribed(channel, lost);
    }
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

  /** The subscriber connection is new: it subscribes to nothing, so every channel again, and its routes catch up. */
  resubscribe() {
    for (const [channel, state] of this.channels) {
      state.resubscribed = true;
      this.toSubscribe.add(channel);
      this.toRead.add(channel);
    }
    this.cycle();
  }

  /** Renews the state key of every channel held here, so its seq and epoch outlive quiet spells. */
  keepAlive() {
    if (!this.answering()) return;
    for (const channel of this.channels.keys()) this.redis.expire(`${tagOf(channel)}:state`, this.namespaceOf(channel).historyTtl).catch(() => {});
  }
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
