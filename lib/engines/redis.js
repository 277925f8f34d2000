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
// fail at once, and the relay tells the workers to refuse them); a bounded
// number may wait for a slow Redis. After the subscriber connection comes
// back, every channel is SUBSCRIBEd again and its routes get what they missed
// from the history.
import { readFileSync } from 'node:fs';
import { require } from '../require.js';
import { Op } from '../ipc.js';
import { addRoute, hasRoute, pushAll, removeRoute } from './routes.js';
import { subscribeReply } from './subscribe-reply.js';
import { historyAnswer } from './history-read.js';
import { IDEMPOTENCY_WINDOW_MS, MAX_IDEMPOTENCY_KEYS } from './idempotency.js';
import { Namespaces } from '../namespaces.js';
import { ErrorCode } from '../protocol.js';
import { CONTROL_CHANNEL, RemoteCalls } from './redis/calls.js';
import { RemoteUsers } from './redis/users.js';

const { Redis } = require('ioredis');

/** Publishes waiting for Redis past which the workers are told to hold off; twice that, refused. */
const BUSY_PUBLISHES = 5000;
const RETRY_MS = 500;
const COMMAND_TIMEOUT_MS = 5000; // a Redis that hangs fails the commands instead of holding them
const SUBSCRIBE_CHUNK = 1000;
const PREFIX = 'gw:{';

class ChannelState {
  constructor() {
    this.routes = undefined;
    this.seq = 0; // the last seq the routes were sent
    this.epoch = undefined;
    this.waiting = []; // subscribes for the next read: {route, since, answer}
    this.reading = undefined; // subscribes the read in flight answers
    this.held = undefined; // live messages [seq, dataJson] received during that read
    this.missed = false; // the subscription dropped: the routes may lack messages
  }
}

/** @implements {import('./index.js').Engine} with its cluster-wide part */
export class RedisEngine {
  /**
   * @param {object} options the resolved configuration (lib/config.js), and the log
   * @param {string} options.redisUrl
   * @param {number} options.historySize outside namespaces
   * @param {number} options.historyTtl seconds, outside namespaces
   * @param {object[]} options.namespaces
   * @param {number} options.maxConnsPerUser 0: no cap to share
   * @param {import('pino').Logger} options.log
   */
  constructor(options) {
    const { redisUrl, maxConnsPerUser, log } = options;
    this.log = log;
    const connection = {
      enableOfflineQueue: false, // unreachable: fail now, queue nothing
      autoResendUnfulfilledCommands: false, // a publish is never run twice
      autoResubscribe: false, // resubscribed here, with the catch-up
      enableAutoPipelining: true, // the commands of one turn go in one write
      maxRetriesPerRequest: 0,
      commandTimeout: COMMAND_TIMEOUT_MS,
      retryStrategy: (attempt) => Math.min(attempt * 100, 2000)
    };
    this.redis = new Redis(redisUrl, connection);
    this.sub = new Redis(redisUrl, connection);
    for (const [name, connection] of [['commands', this.redis], ['subscriber', this.sub]]) {
      connection.on('error', (err) => this.failed(name, err));
      connection.on('ready', () => this.ready(name));
    }
    for (const [name, numberOfKeys] of [['publish', 4], ['read', 2]]) {
      const lua = readFileSync(new URL(`./redis/${name}.lua`, import.meta.url), 'utf8');
      this.redis.defineCommand(`gw_${name}`, { numberOfKeys, lua });
    }
    this.calls = new RemoteCalls(this.redis);
    if (maxConnsPerUser > 0) this.users = new RemoteUsers(this.redis, maxConnsPerUser);
    this.sub.on('message', (name, message) => {
      if (name === CONTROL_CHANNEL) this.calls.received(message);
      else this.received(name, message);
    });
    this.channels = new Map(); // name -> ChannelState
    this.toSubscribe = new Set();
    this.toUnsubscribe = new Set();
    this.toRead = new Set();
    this.cycling = false;
    this.waitingPublishes = 0;
    this.downSince = 0; // when an outage was first logged (0: up)
    this.idempotencyDropped = 0;
    this.configure(options);
  }

  /** The namespaces (at start, and again after SIGHUP). */
  configure(config) {
    this.namespaces = new Namespaces(config);
    const shortest = Math.min(...this.namespaces.all().map((ns) => ns.historyTtl));
    // Keys expire a history TTL after the last publish; a channel held here keeps its seq and epoch.
    clearInterval(this.keeper);
    this.keeper = setInterval(() => this.keepAlive(), (shortest * 1000) / 3);
    this.keeper.unref();
  }

  /** Publishes go out on the command connection; the subscriber's outages are caught up. */
  get available() {
    return this.redis.status === 'ready';
  }

  get congested() {
    return this.waitingPublishes >= BUSY_PUBLISHES;
  }

  /** `done` gets the seq and epoch Redis gave the message (or why it skipped it), or null: refused, or Redis failed it. */
  publish(channel, dataJson, done, idempotencyKey = '', version = '') {
    if (this.waitingPublishes >= 2 * BUSY_PUBLISHES || !this.available) return done?.(null);
    this.waitingPublishes++;
    const tag = tagOf(channel);
    const { historySize, historyTtl } = this.namespaces.of(channel);
    const keys = [`${tag}:state`, `${tag}:history`, `${tag}:idem`, `${tag}:idemt`];
    const limits = [IDEMPOTENCY_WINDOW_MS, MAX_IDEMPOTENCY_KEYS];
    this.redis.gw_publish(...keys, dataJson, newEpoch(), historySize, historyTtl, tag, idempotencyKey, version, ...limits).then(
      ([seq, epoch, skipped, dropped]) => {
        this.waitingPublishes--;
        this.idempotencyDropped += dropped;
        done?.(seq, epoch, skipped ?? undefined);
      },
      () => {
        this.waitingPublishes--;
        done?.(null);
      }
    );
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
    removeRoute(state, route);
    // Asked after the subscribe: answered all the same, and not routed.
    for (const request of state.waiting) if (request.route === route) request.route = undefined;
    for (const request of state.reading ?? []) if (request.route === route) request.route = undefined;
    this.forgetIfUnused(channel, state);
  }

  detach(route) {
    for (const [channel, state] of this.channels) {
      if (hasRoute(state, route)) removeRoute(state, route);
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
    this.redis.gw_read(`${tag}:state`, `${tag}:history`, newEpoch(), historyTtl, String(since?.seq ?? 0), since?.epoch ?? '', '').then(
      ([seq, epoch, entries]) => answer(historyAnswer(epoch, Number(seq), historySize === 0 ? [] : entries.slice(-historySize).map(entryOf), query)),
      () => answer({ error: ErrorCode.UNAVAILABLE, message: 'the engine (Redis) did not answer: retry shortly' })
    );
  }

  /** Channels held on this node (the history is in Redis), the idempotency keys dropped early. */
  figures() {
    return { channels: this.channels.size, historyBytes: 0, idempotencyKeys: 0, idempotencyDropped: this.idempotencyDropped };
  }

  stop() {
    clearInterval(this.keeper);
    this.users?.stop();
    this.redis.disconnect();
    this.sub.disconnect();
  }

  forgetIfUnused(channel, state) {
    if (state.routes !== undefined || state.waiting.length > 0 || state.reading !== undefined) return;
    this.channels.delete(channel);
    this.toSubscribe.delete(channel);
    this.toRead.delete(channel);
    this.toUnsubscribe.add(channel);
    this.cycle();
  }

  received(name, message) {
    const channel = name.slice(PREFIX.length, -1);
    const state = this.channels.get(channel);
    if (state === undefined) return;
    const space = message.indexOf(' ');
    const seq = Number(message.slice(0, space));
    const dataStart = message.indexOf(' ', space + 1) + 1;
    // Not from publish.lua (the data itself is trusted: whoever can write to Redis owns the channels).
    if (!(seq > 0) || dataStart === 0) return;
    const dataJson = message.slice(dataStart);
    if (state.held !== undefined) {
      state.held.push(seq, dataJson);
      return;
    }
    const epoch = message.slice(space + 1, dataStart - 1);
    if (epoch !== state.epoch) this.restart(channel, state, epoch);
    else if (seq <= state.seq) return; // already sent by a catch-up
    state.seq = seq;
    pushAll(state, [Op.MSG, channel, seq, dataJson]);
  }

  /** Runs the pending SUBSCRIBEs, reads and answers, one batch at a time. */
  async cycle() {
    if (this.cycling) return;
    this.cycling = true;
    await null; // what the rest of this turn asks joins the batch
    try {
      while (this.available && this.sub.status === 'ready' && this.toSubscribe.size + this.toUnsubscribe.size + this.toRead.size > 0) {
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
      for (let i = 0; i < unsubscribe.length; i += SUBSCRIBE_CHUNK) {
        this.sub.unsubscribe(...unsubscribe.slice(i, i + SUBSCRIBE_CHUNK).map(tagOf)).catch(() => {});
      }
      for (let i = 0; i < subscribe.length; i += SUBSCRIBE_CHUNK) {
        await this.sub.subscribe(...subscribe.slice(i, i + SUBSCRIBE_CHUNK).map(tagOf));
      }
      const answers = await Promise.all(reads.map(([channel, state]) => this.read(channel, state)));
      await this.sub.ping(); // every message published before those reads has arrived
      for (let i = 0; i < reads.length; i++) this.complete(reads[i][0], reads[i][1], answers[i]);
      return true;
    } catch (err) {
      this.log.warn({ err: err.message }, 'redis engine: subscribe step failed; retrying');
      for (const channel of subscribe) if (this.channels.has(channel)) this.toSubscribe.add(channel);
      for (const [channel, state] of reads) this.retry(channel, state);
      return false;
    }
  }

  read(channel, state) {
    let from = state.missed && state.routes !== undefined ? state.seq : Infinity;
    let latest = false;
    for (const { since } of state.reading) {
      if (since === undefined) latest = true;
      else if (since.seq < from) from = since.seq;
    }
    const ns = this.namespaces.of(channel);
    const tag = tagOf(channel);
    const after = from === Infinity ? '' : String(from);
    return this.redis.gw_read(`${tag}:state`, `${tag}:history`, newEpoch(), ns.historyTtl, after, state.epoch ?? '', latest && ns.latest ? '1' : '');
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
    if (state.missed) for (const [s, data] of history) this.send(channel, state, s, data);
    state.missed = false;
    for (let i = 0; i < held.length && held[i] <= seq; i += 2) this.send(channel, state, held[i], held[i + 1]);
    state.seq = Math.max(state.seq, seq);
    const latest = this.namespaces.of(channel).latest;
    for (const { route, since, answer } of requests) {
      answer(subscribeReply(epoch, seq, since, (after) => replayAfter(history, after, seq), latest));
      if (route !== undefined) addRoute(state, route);
    }
    for (let i = 0; i < held.length; i += 2) if (held[i] > seq) this.send(channel, state, held[i], held[i + 1]);
    this.forgetIfUnused(channel, state);
  }

  /** A new sequence (Redis lost the channel's keys): the routes follow it from its start. */
  restart(channel, state, epoch) {
    if (state.epoch !== undefined) pushAll(state, [Op.EPOCH, channel, epoch]);
    state.epoch = epoch;
    state.seq = 0;
  }

  send(channel, state, seq, dataJson) {
    if (seq <= state.seq) return;
    state.seq = seq;
    pushAll(state, [Op.MSG, channel, seq, dataJson]);
  }

  /** A step that failed: its subscribes wait for the next, its held messages go out now. */
  retry(channel, state) {
    const held = state.held ?? [];
    state.waiting = state.reading.concat(state.waiting);
    state.reading = undefined;
    state.held = undefined;
    for (let i = 0; i < held.length; i += 2) this.send(channel, state, held[i], held[i + 1]);
    this.toRead.add(channel);
  }

  ready(name) {
    if (this.downSince !== 0) {
      this.log.info({ connection: name, downMs: Date.now() - this.downSince }, 'redis engine: reconnected');
    }
    if (this.available && this.sub.status === 'ready') this.downSince = 0;
    if (name === 'subscriber') {
      this.sub.subscribe(CONTROL_CHANNEL).catch(() => {}); // a failure drops this connection: ready again later
      // A new connection subscribes to nothing: every channel again, and its routes catch up.
      for (const [channel, state] of this.channels) {
        this.toSubscribe.add(channel);
        this.toRead.add(channel);
        state.missed = true;
      }
    }
    this.cycle();
  }

  failed(name, err) {
    if (this.downSince !== 0) return; // logged once per outage
    this.downSince = Date.now();
    this.log.error({ connection: name, err: err.message }, 'redis engine: Redis unreachable; publishes refused until it is back');
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
