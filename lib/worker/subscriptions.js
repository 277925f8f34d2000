// The worker's subscription table: channel -> local subscribers, and per
// connection the channels it holds. Channel names are only ever Map keys, so a
// name like "__proto__" is just a name.
import { metrics } from './metrics.js';

// A connection's channels: undefined, one name, or a Set of names. Most
// connections hold one channel, and a Set for one name costs ~150 bytes.
const kChannels = Symbol('channels');

export class Subscriptions {
  /**
   * @param {object} hooks
   * @param {(channel: string) => void} hooks.first a channel gained its first local subscriber
   * @param {(channel: string) => void} hooks.last a channel lost its last local subscriber
   */
  constructor({ first, last }) {
    this.channels = new Map();
    this.first = first;
    this.last = last;
  }

  /** Channels held by one connection. */
  count(ws) {
    const mine = ws[kChannels];
    return mine === undefined ? 0 : typeof mine === 'string' ? 1 : mine.size;
  }

  has(ws, channel) {
    const mine = ws[kChannels];
    return mine === channel || (typeof mine === 'object' && mine.has(channel));
  }

  add(ws, channel) {
    if (this.has(ws, channel)) return;
    const mine = ws[kChannels];
    if (mine === undefined) ws[kChannels] = channel;
    else if (typeof mine === 'string') ws[kChannels] = new Set([mine, channel]);
    else mine.add(channel);
    let subscribers = this.channels.get(channel);
    if (subscribers === undefined) {
      subscribers = new Set();
      this.channels.set(channel, subscribers);
      this.first(channel);
    }
    subscribers.add(ws);
    metrics.subscriptions.inc();
  }

  remove(ws, channel) {
    const mine = ws[kChannels];
    if (mine === channel) ws[kChannels] = undefined;
    else if (typeof mine !== 'object' || !mine.delete(channel)) return;
    this.detach(ws, channel);
  }

  /** Drops every subscription of a connection that is closing. */
  removeAll(ws) {
    const mine = ws[kChannels];
    if (mine === undefined) return;
    ws[kChannels] = undefined;
    if (typeof mine === 'string') this.detach(ws, mine);
    else for (const channel of mine) this.detach(ws, channel);
  }

  /** @returns {Set<WebSocket>|undefined} */
  subscribers(channel) {
    return this.channels.get(channel);
  }

  detach(ws, channel) {
    const subscribers = this.channels.get(channel);
    subscribers.delete(ws);
    metrics.subscriptions.dec();
    if (subscribers.size === 0) {
      this.channels.delete(channel);
      this.last(channel);
    }
  }
}
