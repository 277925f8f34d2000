// The embedded engine (`--engine memory`): one machine, every channel's state
// in the primary, which already sees every publish. The interface and the
// rules every engine keeps are in ./index.js; here they hold so:
// - The epoch is drawn when the channel's state is created, so it changes
//   whenever the sequence starts over: a restarted gateway, or a channel that
//   was forgotten.
// - A channel with no route and no history is forgotten, seq included: the
//   primary's memory follows the channels in use, not every name ever seen.
//   A channel that loses its last route keeps its seq and epoch for the
//   history TTL all the same (an empty history), so its subscribers can
//   come back and recover what was published while they were away.
// - History holds at most `historySize` messages per channel, each for
//   `historyTtl` seconds, both from the channel's namespace
//   (../namespaces.js); all of it together, every namespace, at most
//   `historyMemory` MiB. Past that budget the channels published to longest
//   ago lose their whole history first, so a flood on one channel evicts
//   only the idlest others.
// - idempotencyKey and version: a key seen within its window answers the
//   first result (./idempotency.js); a version not above the channel's last
//   accepted one is stale. Both are checked before the seq is taken, so a
//   skipped publish leaves no trace. A channel's version lives as long as its
//   state (while it has routes or history).
// - Ordering: all of it is synchronous, so a subscribe's answer is at its
//   place among the route's messages by being given at once.
import { History } from './history.js';
import { Skipped } from '../protocol/outcomes.js';
import { Namespaces } from '../core/namespaces.js';
import { addRoute, hasRoute, pushAll, removeRoute } from './routes.js';
import { subscribeReply } from './subscribe-reply.js';
import { LocalDepartures } from './departures-memory.js';
import { historyAnswer } from './history-read.js';
import { IdempotencyKeys, windowOf } from './idempotency.js';
import { messageOp, publishResult } from './publication.js';
import { optionsOver, requireNumbers } from './check-options.js';
import { MemoryPresence } from './presence-memory.js';
import { Ticker } from '../runtime/ticker.js';
import { tellAll } from './listeners.js';
import { defaultsOf } from '../config/options.js';

const SWEEP_MS = 1000;
const PRESENCE_CHANNELS_SHOWN = 20; // the largest, on the status page

class MemoryChannel {
  constructor(ns) {
    this.seq = 0;
    // A random 31-bit integer (free to store in V8), written in base 36.
    this.epoch = randomEpoch();
    this.routes = undefined; // undefined, one route, or an array of routes
    this.history = undefined;
    this.ns = ns; // its namespace, looked up once
    this.version = 0; // the last accepted publish's version
  }
}

/** @implements {import('./index.js').Engine} */
export class MemoryEngine {
  /** Its options and their defaults (the gateway's flags, lib/config/options.js). */
  static DEFAULTS = { ...defaultsOf('history-size', 'history-ttl', 'history-memory', 'presence-max-clients', 'join-leave-interval'), namespaces: [] };

  /**
   * @param {object} options each defaults to its flag's default
   * @param {number} [options.historySize] messages per channel (0: no history), outside namespaces
   * @param {number} [options.historyTtl] seconds, outside namespaces
   * @param {object[]} [options.namespaces]
   * @param {number} [options.historyMemory] MiB for all channels
   * @param {number} [options.presenceMaxClients]
   * @param {number} [options.joinLeaveInterval]
   * @param {(config: object) => Map} [options.protocolNamespaces] the other protocols' namespaces (lib/core/namespaces.js)
   * @throws {RangeError} for a number above given but not finite, or below its least value
   */
  constructor(options) {
    const config = optionsOver(MemoryEngine.DEFAULTS, options);
    requireNumbers('MemoryEngine', config, { historySize: 0, historyTtl: 1, historyMemory: 0, presenceMaxClients: 1, joinLeaveInterval: 1 });
    this.protocolNamespaces = config.protocolNamespaces;
    this.channels = new Map(); // name -> MemoryChannel
    this.recent = new Map(); // name -> MemoryChannel with history, published to longest ago first
    this.historyBytes = 0;
    this.keyRings = new Map(); // a window (ms) -> the keys remembered for it, oldest first
    this.occupancy = undefined; // (channel, occupied) => void telling every listener, once one is added
    this.occupancyListeners = [];
    this.departures = new LocalDepartures();
    this.configure(config);
    this.presence = new MemoryPresence({
      maxClients: config.presenceMaxClients,
      interval: config.joinLeaveInterval,
      routesOf: (channel) => this.channels.get(channel),
      namespaceOf: (channel) => this.namespaces.of(channel)
    });
    // Runs only while a channel keeps history.
    this.sweeper = new Ticker('history-sweep', SWEEP_MS, () => {
      this.sweep(Date.now());
      return this.recent.size > 0;
    });
  }

  /** Publishes always succeed: the state is here. */
  get available() {
    return true;
  }

  get congested() {
    return false;
  }

  /** Neither changes, by itself or otherwise. */
  get steady() {
    return true;
  }

  /** The namespaces (at start, and again after SIGHUP) and the budget. */
  configure(config) {
    this.namespaces = new Namespaces(config, this.protocolNamespaces);
    this.budget = config.historyMemory * 2 ** 20;
    this.minTtlMs = Math.min(...this.namespaces.all().map((ns) => ns.historyTtl)) * 1000;
    for (const [channel, state] of this.channels) {
      const ns = this.namespaces.of(channel);
      // A history's ring is laid out for its size: one whose size changed starts again.
      if (state.history !== undefined && ns.historySize !== state.ns.historySize) this.dropHistory(channel, state);
      state.ns = ns;
    }
  }

  /**
   * `reply` is answered at once: stored is stamped here, so no promise per
   * publish, and a publish nobody waits for (no reply, no key) allocates
   * nothing here but its route's message.
   * @param {import('../core/seams.js').Publication} publication read now, not kept
   * @param {import('./publication.js').PublishReply} [reply]
   */
  publish(publication, reply) {
    const { channel, data, exclude, idempotencyKey, version } = publication;
    const keys = idempotencyKey === undefined ? undefined : this.keysOf(channel);
    if (keys !== undefined) {
      const first = keys.find(channel, idempotencyKey, Date.now());
      if (first !== -1) return reply?.answered(publishResult(keys.seqAt(first), epochText(keys.epochAt(first)), Skipped.DUPLICATE));
    }
    let state = this.channels.get(channel);
    if (state === undefined) {
      const ns = this.namespaces.of(channel);
      // Nobody listens and nothing is kept: the state would be forgotten at once.
      if (ns.historySize === 0) return this.published(channel, 1, randomEpoch(), reply, idempotencyKey, keys);
      state = this.create(channel, ns);
    }
    if (version !== undefined) {
      if (version <= state.version) return reply?.answered(publishResult(state.seq, epochText(state.epoch), Skipped.STALE));
      state.version = version;
    }
    const seq = ++state.seq;
    if (state.routes !== undefined) pushAll(state, messageOp(channel, seq, data, exclude));
    if (state.ns.historySize > 0) this.remember(channel, state, data);
    if (reply !== undefined || keys !== undefined) this.published(channel, seq, state.epoch, reply, idempotencyKey, keys);
  }

  /** Answers at once: every message published after it reaches the route. */
  subscribe(channel, route, since, answer) {
    const state = this.channels.get(channel) ?? this.create(channel, this.namespaces.of(channel));
    if (addRoute(state, route)) this.occupancy?.(channel, true);
    const missed = (after) => {
      const history = state.history;
      if (history === undefined) return undefined;
      this.historyBytes -= history.expire(Date.now() - state.ns.historyTtl * 1000, state.ns.historySize);
      return history.after(after, state.seq, state.ns.historySize);
    };
    answer(subscribeReply(epochText(state.epoch), state.seq, since, missed, state.ns.latest));
  }

  /** The server API's history read: answered at once, creating nothing. */
  history(channel, query, answer) {
    const state = this.channels.get(channel);
    if (state === undefined) return answer(historyAnswer(epochText(randomEpoch()), 0, [], query));
    const { history, seq } = state;
    const entries = [];
    if (history !== undefined) {
      const { historySize, historyTtl } = state.ns;
      this.historyBytes -= history.expire(Date.now() - historyTtl * 1000, historySize);
      const first = seq - history.count + 1;
      history.after(first - 1, seq, historySize).forEach((data, i) => entries.push([first + i, data]));
    }
    answer(historyAnswer(epochText(state.epoch), seq, entries, query));
  }

  /** Stops routing the channel to `route`. */
  unsubscribe(channel, route) {
    const state = this.channels.get(channel);
    if (state === undefined) return;
    this.unroute(channel, state, route);
  }

  /** A route that is gone (its worker died): off every channel, its clients out of presence. */
  detach(route) {
    for (const [channel, state] of this.channels) {
      if (hasRoute(state, route)) {
        this.unroute(channel, state, route);
      }
    }
    this.presence.detach(route);
  }

  /** The primary routes every subscriber of the machine: a channel's first route and its last are its occupancy. */
  onOccupancy(listener) {
    this.occupancyListeners.push(listener);
    this.occupancy ??= tellAll(this.occupancyListeners);
  }

  /** The per-user view of presence (MemberListener in ./index.js). */
  onMember(listener) {
    this.presence.onMember(listener);
  }

  /** Channels with state, the bytes their history holds, the idempotency keys held and let go early, the presence entries. */
  figures() {
    const { channels, historyBytes, keyRings, presence } = this;
    const rings = [...keyRings.values()];
    return {
      channels: channels.size,
      historyBytes,
      idempotencyKeys: rings.reduce((sum, keys) => sum + keys.size, 0),
      idempotencyDropped: rings.reduce((sum, keys) => sum + keys.dropped, 0),
      presenceClients: presence.table.size,
      presenceChannels: presence.table.largest(PRESENCE_CHANNELS_SHOWN)
    };
  }

  stop() {
    this.sweeper.stop();
    this.presence.stop();
  }

  create(channel, ns) {
    const state = new MemoryChannel(ns);
    this.channels.set(channel, state);
    return state;
  }

  /** The idempotency keys of a channel's window: one ring per window, so each expires oldest first. */
  keysOf(channel) {
    const windowMs = windowOf(this.channels.get(channel)?.ns ?? this.namespaces.of(channel));
    let keys = this.keyRings.get(windowMs);
    if (keys === undefined) this.keyRings.set(windowMs, (keys = new IdempotencyKeys(undefined, windowMs)));
    return keys;
  }

  /** Answers a publish, and remembers its key in `keys`, its channel's (keysOf). */
  published(channel, seq, epoch, reply, idempotencyKey, keys) {
    keys?.remember(channel, idempotencyKey, seq, epoch, Date.now());
    reply?.answered(publishResult(seq, epochText(epoch)));
  }

  unroute(channel, state, route) {
    if (!removeRoute(state, route)) return;
    this.occupancy?.(channel, false);
    if (state.ns.historySize === 0) this.channels.delete(channel);
    else this.touch(channel, state, Date.now()); // kept for the TTL from now
  }

  remember(channel, state, dataJson) {
    const now = Date.now();
    const { historySize, historyTtl } = state.ns;
    const history = this.touch(channel, state, now);
    this.historyBytes += history.append(dataJson, now, historySize);
    this.historyBytes -= history.expire(now - historyTtl * 1000, historySize);
    if (this.historyBytes > this.budget) this.evict();
  }

  /** Marks the channel used now: last in the eviction order. */
  touch(channel, state, now) {
    let history = state.history;
    if (history === undefined) state.history = history = new History();
    else this.recent.delete(channel); // re-inserted last: the Map's order is the eviction order
    this.recent.set(channel, state);
    this.sweeper.start();
    history.usedAt = now;
    return history;
  }

  /** Past the budget: whole histories go, idlest channel first. */
  evict() {
    for (const [channel, state] of this.recent) {
      if (this.historyBytes <= this.budget) return;
      this.dropHistory(channel, state);
    }
  }

  /**
   * Drops the histories whose newest message is past their namespace's TTL.
   * `recent` is in order of use: past the shortest TTL's cutoff none of the
   * rest has expired; before it, each is held to its own.
   */
  sweep(now) {
    const none = now - this.minTtlMs;
    for (const [channel, state] of this.recent) {
      const usedAt = state.history.usedAt;
      if (usedAt >= none) return;
      if (usedAt < now - state.ns.historyTtl * 1000) this.dropHistory(channel, state);
    }
  }

  dropHistory(channel, state) {
    this.historyBytes -= state.history.bytes;
    state.history = undefined;
    this.recent.delete(channel);
    if (state.routes === undefined) this.channels.delete(channel);
  }
}

function randomEpoch() {
  return (Math.random() * 0x7fffffff) | 0;
}

/** An epoch as the clients see it. */
function epochText(epoch) {
  return epoch.toString(36);
}
