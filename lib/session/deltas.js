// Deltas for one channel on one worker: the subscribers that asked for them
// (`"delta": "fossil"`), and the channel's last message, against which the
// next one is diffed. A message's delta is computed once here, whatever the
// number of its delta subscribers, and encoded once per transport.
//
// The rules, enforced in write():
// - a delta is a fossil delta of the message's data as JSON text (UTF-8)
//   against the previous message's (seq - 1), the text the engines store;
// - it is sent only when smaller than that text, and only to a subscriber
//   that was sent the previous message on this subscription: its first
//   message, the first after any seq it missed (a gap, a recovery's replay,
//   a `latest` replay) and binary data go in full;
// - the client rebuilds the text with the previous message's, so it must
//   hold exactly the text the gateway diffed: JSON.stringify of the data it
//   was handed, which is the stored text (every publish path serialises
//   with JSON.stringify, and that round-trips).
import { createDelta } from 'fossil-delta';
import { isBinary } from '../codecs/data.js';
import { TRANSPORTS } from '../transport/transport.js';
import { kTransport } from '../core/symbols.js';

const NONE = -1; // a subscriber's last seq before it was sent any message (seqs count from 1)

export class ChannelDeltas extends Map {
  // Map: delta subscriber -> the seq of the last message it was sent (NONE: none yet)
  constructor() {
    super();
    this.seq = 0; // of the last message seen (0: none)
    this.text = undefined; // its data's UTF-8 bytes; undefined for binary data
    this.delta = undefined; // the last message's delta, when it is smaller than its text
    this.encoded = new Array(TRANSPORTS.length); // the delta's frame per transport, built on first use
    this.sent = 0; // deltas and full messages written for the last message
    this.full = 0;
  }

  /** A new subscriber: its first message goes in full. */
  subscribed(conn) {
    this.set(conn, NONE);
  }

  /** A message arrives: its delta against the one before, computed once for every subscriber. */
  next(seq, dataJson) {
    const text = isBinary(dataJson) ? undefined : Buffer.from(dataJson);
    let delta;
    if (text !== undefined && this.text !== undefined && this.seq === seq - 1) {
      delta = createDelta(this.text, text);
      if (delta.length >= text.length) delta = undefined;
    }
    this.seq = seq;
    this.text = text;
    this.delta = delta;
    this.encoded.fill(undefined);
    this.sent = this.full = 0;
  }

  /**
   * Writes the current message to a delta subscriber: as the delta when it
   * was sent the previous one, otherwise `full` (the message's usual bytes).
   * @returns {boolean} whether it was written
   */
  write(conn, channel, full, maxBuffered) {
    const transport = conn[kTransport];
    const seq = this.seq;
    const asDelta = this.delta !== undefined && this.get(conn) === seq - 1;
    this.set(conn, seq);
    if (!asDelta) {
      this.full++;
      return transport.writeMessage(conn, full, maxBuffered);
    }
    this.sent++;
    const bytes = (this.encoded[transport.index] ??= transport.encodeDelta(channel, seq, this.delta));
    return transport.write(conn, bytes, maxBuffered);
  }
}
