// The worker's subscription table: channel -> local channel (its live
// subscribers, and where the channel stands), and per connection the
// channels it holds. Channel names are only ever Map keys, so a name like
// "__proto__" is just a name.
//
// A connection holds a channel from its subscribe on, but receives the
// channel's messages only once it is live: after the primary answered its
// subscribe (or at once, when this worker already receives the channel).
// Until then it is pending, so a recovery's replay and the live messages
// join exactly (see ../worker/relay.js and ./fan-out.js).
import { gaugeReads, metrics } from './metrics.js';
import { ChannelDeltas } from './deltas.js';
import { kSession } from '../core/symbols.js';

// A connection's channels are its session's (lib/core/session.js), written
// here alone: `channels` is undefined, one name, or a Set of names (most
// connections hold one channel, and a Set for one name costs ~150 bytes);
// `companions` counts those a protocol holds beside one the client asked
// for (Pusher's member events beside its presence channel), which do not
// count toward --max-subscriptions.

// Until watch(): no channel is watched (a relay alone, in tests and baselines).
const UNWATCHED = Object.freeze({ watched: () => false });

/**
 * One channel on this worker: a Set of its live subscribers, of every
 * transport (a subclass, so a channel costs one object), the number of
 * pending ones, and the last seq and the epoch this worker has seen, valid
 * once `routed`.
 */
export class LocalChannel extends Set {
  constructor(name, watched) {
    super();
    this.name = name;
    this.watched = watched; // its subscribers enter and leave presence (./presence.js)
    this.pending = 0;
    this.routed = false; // the primary has answered a subscribe for this record
    this.seq = 0;
    this.epoch = '';
    this.deltas = undefined; // ChannelDeltas while some subscriber takes deltas
    // A way in's follower of the channel's messages here, called with each (seq, data) before its
    // subscribers get it (Ably's members view: lib/ably/members-view.js); gone with the record.
    this.follower = undefined;
  }

  /** The primary answered a subscribe for this record: the channel stands at `seq` of `epoch`, and its messages come here. */
  route(epoch, seq) {
    this.routed = true;
    this.epoch = epoch;
    this.seq = seq;
  }

  /** The channel's sequence started over: a recovery from the old one must not look up to date here. */
  restart(epoch) {
    if (!this.routed) return;
    this.epoch = epoch;
    this.seq = 0;
    this.follower = undefined; // what it followed is of the old sequence
  }
}

export class Subscriptions {
  /**
   * @param {object} hooks
   * @param {(channel: string) => void} hooks.last a channel lost its last local holder
   */
  constructor({ last }) {
    this.channels = new Map(); // name -> LocalChannel
    this.last = last;
    this.presence = UNWATCHED;
    this.held = 0; // subscriptions held by connections, live or pending
    gaugeReads(metrics.subscriptions, () => this.held);
  }

  /**
   * @param {import('./presence.js').WorkerPresence} presence told when a
   *   watched channel's subscription goes live (joined) and ends (left)
   */
  watch(presence) {
    this.presence = presence;
  }

  /** Channels held by one connection, live or pending, companions left out. */
  count(ws) {
    const { channels: mine, companions } = ws[kSession];
    return (mine === undefined ? 0 : typeof mine === 'string' ? 1 : mine.size) - companions;
  }

  /** @returns {string[]} the channels one connection holds, live or pending */
  channelsOf(ws) {
    const mine = ws[kSession].channels;
    return mine === undefined ? [] : typeof mine === 'string' ? [mine] : [...mine];
  }

  /** Whether the connection holds the channel, live or still joining (its local record says which: `local(channel).has(ws)`). */
  holds(ws, channel) {
    const mine = ws[kSession].channels;
    return mine === channel || (typeof mine === 'object' && mine.has(channel));
  }

  /** @returns {LocalChannel|undefined} the channel's record here: its live subscribers, where it stands */
  local(name) {
    return this.channels.get(name);
  }

  /**
   * Whether this worker already receives `channel` and stands where `since`
   * says (or no `since`): a subscribe it can answer itself, with nothing to
   * replay. Never in a `latest` namespace without `since`: the latest
   * message comes from the engine.
   */
  upToDate(channel, since, latest) {
    const known = this.channels.get(channel);
    if (known?.routed !== true) return false;
    return since === undefined ? !latest : since.epoch === known.epoch && since.seq === known.seq;
  }

  /**
   * Subscribers per channel (live and pending) of the channels starting with `prefix`.
   * @returns {Object<string, number>|null} null past `max` channels
   */
  counts(prefix, max) {
    const out = Object.create(null); // a channel may be called __proto__
    let n = 0;
    for (const [name, local] of this.channels) {
      if (!name.startsWith(prefix)) continue;
      if (++n > max) return null;
      out[name] = local.size + local.pending;
    }
    return out;
  }

  /**
   * Records that `ws` holds `channel`, pending until activate().
   * @param {boolean} [companion] held beside another channel, not counted by count()
   * @returns {LocalChannel}
   */
  add(ws, channel, companion = false) {
    const session = ws[kSession];
    if (companion) session.companions++;
    const mine = session.channels;
    if (mine === undefined) session.channels = channel;
    else if (typeof mine === 'string') session.channels = new Set([mine, channel]);
    else mine.add(channel);
    let local = this.channels.get(channel);
    if (local === undefined) this.channels.set(channel, (local = new LocalChannel(channel, this.presence.watched(channel))));
    local.pending++;
    this.held++;
    return local;
  }

  /**
   * A pending subscriber starts receiving the channel's messages.
   * @param {boolean} [deltas] as deltas where they are smaller (./deltas.js)
   * @param {boolean} [entered] its presence entry is made already (admitted under a cap)
   */
  activate(ws, local, deltas = false, entered = false) {
    local.pending--;
    local.add(ws);
    if (deltas) (local.deltas ??= new ChannelDeltas()).subscribed(ws);
    if (local.watched && !entered) this.presence.joined(ws, local.name);
  }

  /** @param {boolean} [companion] as it was added */
  remove(ws, channel, companion = false) {
    const session = ws[kSession];
    const mine = session.channels;
    if (mine === channel) session.channels = undefined;
    else if (typeof mine !== 'object' || !mine.delete(channel)) return;
    if (companion) session.companions--;
    this.detach(ws, channel);
  }

  /** Drops every subscription of a connection that is closing. */
  removeAll(ws) {
    const session = ws[kSession];
    const mine = session.channels;
    if (mine === undefined) return;
    session.channels = undefined;
    if (typeof mine === 'string') this.detach(ws, mine);
    else for (const channel of mine) this.detach(ws, channel);
  }

  detach(ws, channel) {
    const local = this.channels.get(channel);
    if (!local.delete(ws)) local.pending--;
    else if (local.watched) this.presence.left(ws, channel);
    if (local.deltas?.delete(ws) && local.deltas.size === 0) local.deltas = undefined;
    this.held--;
    if (local.size === 0 && local.pending === 0) {
      this.channels.delete(channel);
      this.last(channel);
    }
  }
}
