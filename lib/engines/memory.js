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
//   `historyTtl` seconds; all of it together at most `historyMemory` MiB.
//   Past that budget the channels published to longest ago lose their whole
//   history first, so a flood on one channel evicts only the idlest others.
// - Ordering: all of it is synchronous, so a subscribe's answer is at its
//   place among the route's messages by being given at once.
import { History } from './history.js';
import { Op } from '../ipc.js';
import { addRoute, hasRoute, pushAll, removeRoute } from './routes.js';
import { subscribeReply } from './subscribe-reply.js';

const SWEEP_MS = 1000;

class ChannelState {
  constructor() {
    this.seq = 0;
    // A random 31-bit integer (free to store in V8), written in base 36.
    this.epoch = (Math.random() * 0x7fffffff) | 0;
    this.routes = undefined; // undefined, one route, or an array of routes
    this.history = undefined;
  }
}

/** @implements {import('./index.js').Engine} */
export class MemoryEngine {
  /**
   * @param {object} options
   * @param {number} options.historySize messages per channel (0: no history)
   * @param {number} options.historyTtl seconds
   * @param {number} options.historyMemory MiB for all channels
   */
  constructor({ historySize, historyTtl, historyMemory }) {
    this.historySize = historySize;
    this.ttlMs = historyTtl * 1000;
    this.budget = historyMemory * 2 ** 20;
    this.channels = new Map(); // name -> ChannelState
    this.recent = new Map(); // name -> ChannelState with history, published to longest ago first
    this.historyBytes = 0;
    this.sweeper = setInterval(() => this.sweep(Date.now()), SWEEP_MS);
    this.sweeper.unref();
  }

  /** Publishes always succeed: the state is here. */
  get available() {
    return true;
  }

  get congested() {
    return false;
  }

  /** `done` is called at once: stored is stamped here, so no promise per publish. */
  publish(channel, dataJson, done, a, b) {
    let state = this.channels.get(channel);
    if (state === undefined) {
      // Nobody listens and nothing is kept: a sequence that ends at once.
      if (this.historySize === 0) return done?.(1, new ChannelState().epoch.toString(36), a, b);
      state = new ChannelState();
      this.channels.set(channel, state);
    }
    const seq = ++state.seq;
    if (state.routes !== undefined) pushAll(state, [Op.MSG, channel, seq, dataJson]);
    if (this.historySize > 0) this.remember(channel, state, dataJson);
    done?.(seq, state.epoch.toString(36), a, b);
  }

  /** Answers at once: every message published after it reaches the route. */
  subscribe(channel, route, since, answer) {
    let state = this.channels.get(channel);
    if (state === undefined) {
      state = new ChannelState();
      this.channels.set(channel, state);
    }
    addRoute(state, route);
    const missed = () => {
      const history = state.history;
      if (history === undefined) return undefined;
      this.historyBytes -= history.expire(Date.now() - this.ttlMs, this.historySize);
      return history.after(since.seq, state.seq, this.historySize);
    };
    answer(subscribeReply(state.epoch.toString(36), state.seq, since, missed));
  }

  /** Stops routing the channel to `route`. */
  unsubscribe(channel, route) {
    const state = this.channels.get(channel);
    if (state === undefined) return;
    this.unroute(channel, state, route);
  }

  /** A route that is gone (its worker died): off every channel. */
  detach(route) {
    for (const [channel, state] of this.channels) {
      if (hasRoute(state, route)) {
        this.unroute(channel, state, route);
      }
    }
  }

  /** Channels with state, and the bytes their history holds. */
  figures() {
    return { channels: this.channels.size, historyBytes: this.historyBytes };
  }

  stop() {
    clearInterval(this.sweeper);
  }

  unroute(channel, state, route) {
    removeRoute(state, route);
    if (state.routes !== undefined) return;
    if (this.historySize === 0) this.channels.delete(channel);
    else this.touch(channel, state, Date.now()); // kept for the TTL from now
  }

  remember(channel, state, dataJson) {
    const now = Date.now();
    const history = this.touch(channel, state, now);
    this.historyBytes += history.append(dataJson, now, this.historySize);
    this.historyBytes -= history.expire(now - this.ttlMs, this.historySize);
    if (this.historyBytes > this.budget) this.evict();
  }

  /** Marks the channel used now: last in the eviction order. */
  touch(channel, state, now) {
    let history = state.history;
    if (history === undefined) state.history = history = new History();
    else this.recent.delete(channel); // re-inserted last: the Map's order is the eviction order
    this.recent.set(channel, state);
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

  /** Drops the histories whose newest message is past the TTL. */
  sweep(now) {
    const cutoff = now - this.ttlMs;
    for (const [channel, state] of this.recent) {
      if (state.history.usedAt >= cutoff) return; // the rest were used later
      this.dropHistory(channel, state);
    }
  }

  dropHistory(channel, state) {
    this.historyBytes -= state.history.bytes;
    state.history = undefined;
    this.recent.delete(channel);
    if (state.routes === undefined) this.channels.delete(channel);
  }
}
