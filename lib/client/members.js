// A live member list of one channel: what every chat UI writes by hand. It
// reads presence once subscribed (and again once resubscribed after a
// reconnect, when its own id and others' have changed), then applies the
// channel's presence_diff frames. The gateway folds a channel's changes so
// that a presence read plus every diff after it is the truth; diffs that
// arrive while a read is on its way are held and applied to its answer, in
// order, so one that crossed the answer is not lost.
import { ErrorCode } from '../core/errors.js';
import { Emitter } from '../client/emitter.js';
import { ClientErrorCode } from '../client/errors.js';

/**
 * Events: 'change' (members: Map<client, {user?, info?}>) after every change;
 * 'error' (Error) when a read failed. Past too_many (the room is larger than
 * the gateway lists) or over SSE (receive_only) the list follows the diffs
 * only, and reads no more.
 */
export class Members extends Emitter {
  #client;
  #stops = [];
  #held = null; // diffs that came while a read was on its way (null: none on its way)
  #reads = 0; // reads asked: only the last one's answer counts
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
    this.#stops.push(
      client.on('presence_diff', (diff) => this.#diff(diff)),
      client.on('resubscribed', ({ channel: resubscribed }) => resubscribed === channel && this.#read())
    );
    this.ready = client.subscribe(channel, noop).then(() => this.#read());
  }

  /** Stops following, and unsubscribes. */
  close() {
    for (const stop of this.#stops.splice(0)) stop();
    return this.#client.unsubscribe(this.channel, noop);
  }

  #diff(diff) {
    if (diff.channel !== this.channel) return;
    if (this.#held !== null) return this.#held.push(diff);
    apply(this.members, diff);
    this.emit('change', this.members);
  }

  async #read() {
    if (!this.#readable) return;
    const read = ++this.#reads;
    this.#held ??= [];
    let clients;
    let failure;
    try {
      clients = await this.#client.presence(this.channel);
    } catch (err) {
      failure = err;
    }
    if (read !== this.#reads) return; // a later read (another reconnect) takes the held diffs
    if (clients !== undefined) this.members = new Map(Object.entries(clients));
    for (const diff of this.#held) apply(this.members, diff);
    this.#held = null;
    if (failure === undefined) this.emit('change', this.members);
    else this.#failed(failure);
  }

  #failed(err) {
    if (err.code === ClientErrorCode.DISCONNECTED) return; // the resubscribe reads anew
    if (err.code === ErrorCode.TOO_MANY || err.code === ClientErrorCode.RECEIVE_ONLY) this.#readable = false;
    this.emit('error', err);
  }
}

/** A diff onto a list: a join of a listed client and a leave of an absent one change nothing. */
function apply(members, { joins, leaves }) {
  for (const client in joins) members.set(client, joins[client]);
  for (const client in leaves) members.delete(client);
}

function noop() {}
