// The embedded engine (`--engine memory`): one machine, every channel's state
// in the primary, which already sees every publish. An engine gives each
// publish its channel's next seq, keeps the channel's history, answers
// "what did I miss since seq S of epoch E", and delivers each message to the
// routes (the local workers) that hold subscribers on the channel.
//
// The rules, enforced here:
// - A channel's seq counts from 1 within its epoch. The epoch is drawn when
//   the channel's state is created, so it changes whenever the sequence
//   starts over: a restarted gateway, or a channel that was forgotten.
// - A channel with no route and no history is forgotten, seq included: the
//   primary's memory follows the channels in use, not every name ever seen.
//   A channel that loses its last route keeps its seq and epoch for the
//   history TTL all the same (an empty history), so its subscribers can
//   come back and recover what was published while they were away.
// - History holds at most `historySize` messages per channel, each for
//   `historyTtl` seconds; all of it together at most `historyMemory` MiB.
//   Past that budget the channels published to longest ago lose their whole
//   history first, so a flood on one channel evicts only the idlest others.
// - Recovery is exact or refused: the messages after `since.seq`, all of
//   them, in order; or `epoch_changed` / `too_old` and nothing.
//
// A route is anything with `push(op)` (a worker's IPC batch). Messages go out
// as ['msg', channel, seq, dataJson].
//
// The engine seam (this engine and ./redis.js): publish returns the seq,
// or a promise of it from an engine that must ask elsewhere; subscribe calls
// `answer(reply)` at its place in the route's messages (here at once);
// `available` and `congested` are polled by the relay (./relay.js).
import { History } from './history.js';
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

  /** @returns {number} the seq given to the message */
  publish(channel, dataJson) {
    let state = this.channels.get(channel);
    if (state === undefined) {
      // Nobody listens and nothing is kept: the state would be forgotten at once.
      if (this.historySize === 0) return 1;
      state = new ChannelState();
      this.channels.set(channel, state);
    }
    const seq = ++state.seq;
    if (state.routes !== undefined) pushAll(state, ['msg', channel, seq, dataJson]);
    if (this.historySize > 0) this.remember(channel, state, dataJson);
    return seq;
  }

  /**
   * Routes the channel's messages to `route` from now on, and answers where
   * the channel stands. With `since`, also the messages missed after it; every
   * message published after the answer reaches the route, so the replay and
   * the live messages join with no gap and no overlap.
   * @param {string} channel
   * @param {{push: Function}} route
   * @param {{seq: number, epoch: string} | undefined} since
   * @param {(reply: {epoch: string, seq: number, result?: string, replay?: string[]}) => void} answer
   */
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
