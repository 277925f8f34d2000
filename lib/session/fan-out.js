// Fan-out: a channel's message to its live subscribers on this worker. The
// message is encoded once per transport present (on its first subscriber)
// and the same bytes written to each; a subscriber that takes deltas gets the
// channel's delta instead (./deltas.js); `exclude`, a client id, is left out
// (a Pusher client event's sender, the socket_id an HTTP API call named).
import { kSession, kTransport } from '../core/symbols.js';
import { TRANSPORTS } from '../transport/transport.js';
import { countDelivered, metrics } from './metrics.js';

export class FanOut {
  /**
   * @param {object} options
   * @param {import('./subscriptions.js').Subscriptions} options.subscriptions
   * @param {number} options.maxBuffered bytes a connection may have unsent before it counts as a slow consumer
   */
  constructor({ subscriptions, maxBuffered }) {
    this.subscriptions = subscriptions;
    this.maxBuffered = maxBuffered;
    this.encoded = new Array(TRANSPORTS.length); // one message's encoding per transport, reused
  }

  /** @param {string} [exclude] a client id not to deliver to */
  deliver(channel, seq, dataJson, exclude) {
    const subscribers = this.subscriptions.local(channel);
    if (subscribers === undefined) return;
    subscribers.follower?.follow(seq, dataJson);
    subscribers.seq = seq;
    const { encoded, maxBuffered } = this;
    encoded.fill(undefined);
    const deltas = subscribers.deltas; // undefined unless some subscriber takes deltas
    deltas?.next(seq, dataJson);
    let delivered = 0;
    for (const conn of subscribers) {
      if (exclude !== undefined && conn[kSession].id === exclude) continue;
      const transport = conn[kTransport];
      const message = (encoded[transport.index] ??= transport.encode(channel, seq, subscribers.epoch, dataJson));
      if (deltas?.has(conn) ? deltas.write(conn, channel, message, maxBuffered) : transport.writeMessage(conn, message, maxBuffered)) delivered++;
    }
    if (delivered > 0) countDelivered(channel, delivered);
    if (deltas !== undefined) countDeltas(deltas);
  }
}

function countDeltas({ sent, full }) {
  if (sent > 0) metrics.deltas.inc({ result: 'sent' }, sent);
  if (full > 0) metrics.deltas.inc({ result: 'full' }, full);
}
