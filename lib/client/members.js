// A live member list of one channel: what every chat UI writes by hand. It
// reads presence once subscribed, then follows join and leave. Join/leave
// frames are at most once and rate-limited (a reconnect storm in a big room
// drops most of them), so the list checks itself: once the frames have been
// quiet for a moment it asks presence_stats (O(1) for the gateway), and reads
// presence again when the count or the digest of the ids differs from its
// own; it reads presence again after every reconnect too.
import { ErrorCode, presenceDigest } from '../protocol.js';
import { Emitter } from '../client/emitter.js';
import { ClientErrorCode } from '../client/errors.js';

const CHECK_MS = 1000; // quiet time after the last join/leave (or read) before the count is checked

/**
 * Events: 'change' (members: Map<client, {user?, info?}>) after every change;
 * 'error' (Error) when a read failed. Past too_many (the room is larger than
 * the gateway lists) or over SSE (receive_only) the list follows join/leave
 * only, and reads no more.
 */
export class Members extends Emitter {
  #client;
  #timer;
  #stops = [];
  #stale = false; // reconnected: this client's id changed, and frames were missed while away
  #readable = true; // false once a read can never succeed (too_many, receive_only)

  /**
   * @param {import('./index.js').Client} client
   * @param {string} channel a channel of a presence namespace (joinLeave too, for live changes)
   */
  constructor(client, channel) {
    super();
    this.#client = client;
    this.channel = channel;
    /** @type {Map<string, {user?: string, info?: object}>} by client id */
    this.members = new Map();
    const follow = (frame) => this.#frame(frame);
    this.#stops.push(client.on('join', follow), client.on('leave', follow));
    this.#stops.push(
      client.on('state', (state) => {
        if (state !== 'open') return;
        this.#stale = true;
        this.#schedule(); // once the resubscribe is live and the storm has passed
      })
    );
    this.ready = client.subscribe(channel, noop).then(() => this.#read());
  }

  /** Stops following, and unsubscribes. */
  close() {
    clearTimeout(this.#timer);
    for (const stop of this.#stops.splice(0)) stop();
    return this.#client.unsubscribe(this.channel, noop);
  }

  #frame({ type, channel, client, user, info }) {
    if (channel !== this.channel) return;
    if (type === 'join') this.members.set(client, entry(user, info));
    else this.members.delete(client);
    this.emit('change', this.members);
    this.#schedule();
  }

  /** A check after the frames have been quiet for CHECK_MS (each frame pushes it back). */
  #schedule() {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#check(), CHECK_MS);
  }

  async #check() {
    if (!this.#readable) return;
    try {
      if (this.#stale || !this.#matches(await this.#client.presenceStats(this.channel))) await this.#read();
    } catch (err) {
      this.#failed(err);
    }
  }

  async #read() {
    try {
      const clients = await this.#client.presence(this.channel);
      this.#stale = false;
      this.members = new Map(Object.entries(clients));
      this.emit('change', this.members);
    } catch (err) {
      return this.#failed(err);
    }
    this.#schedule(); // frames may have crossed the answer: checked once quiet
  }

  #matches({ clients, digest }) {
    return clients === this.members.size && digest === presenceDigest(this.members.keys());
  }

  #failed(err) {
    if (err.code === ClientErrorCode.DISCONNECTED) return; // the reconnect schedules anew
    if (err.code === ErrorCode.TOO_MANY || err.code === ClientErrorCode.RECEIVE_ONLY) this.#readable = false;
    else this.#schedule();
    this.emit('error', err);
  }
}

function entry(user, info) {
  const out = {};
  if (user !== undefined) out.user = user;
  if (info !== undefined) out.info = info;
  return out;
}

function noop() {}
