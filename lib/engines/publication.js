// What a publish carries into an engine, and what the engine answers
// (./index.js, Engine.publish).
import { Op } from '../core/ipc.js';

/**
 * @typedef {object} Publication
 * @property {string} channel
 * @property {string} data the message, serialised (JSON)
 * @property {string} [exclude] a client id the live message is not delivered
 *   to (a Pusher client event's sender; the socket_id a Pusher HTTP API call
 *   names): no space in it. Not kept in the history: a replay (a recovery, a
 *   Pusher cache channel's last event on subscribe) reaches that client too
 * @property {string} [idempotencyKey] a retry with the same key on the same
 *   channel within the window publishes nothing (./idempotency.js)
 * @property {number} [version] published only above the channel's last accepted version
 *
 * @typedef {object} PublishResult
 * @property {number} seq the publish's place in its channel's sequence; for a skipped one, the first publish's (duplicate) or where the channel stands (stale)
 * @property {string} epoch the sequence `seq` belongs to
 * @property {string | undefined} skipped 'duplicate' or 'stale' (Skipped in ../protocol/outcomes.js): nothing was published
 *
 * Who waits for a publish's result: answered once, with the result once the
 * engine has stored the message (an acknowledgement means stored), or with
 * null when it refused or failed it (the message may still have been
 * published: a retry with the same idempotency key is safe). An object
 * rather than a callback, so the relay's reply costs no closure.
 * @typedef {{answered: (result: PublishResult | null) => void}} PublishReply
 */

/**
 * Every engine answers with this one shape (the same fields in the same
 * order), so the code that reads answers sees one kind of object.
 * @returns {PublishResult}
 */
export function publishResult(seq, epoch, skipped = undefined) {
  return { seq, epoch, skipped };
}

/** A channel's message for its routes: [Op.MSG, channel, seq, data], `exclude` appended when there is one. */
export function messageOp(channel, seq, data, exclude) {
  return exclude === undefined ? [Op.MSG, channel, seq, data] : [Op.MSG, channel, seq, data, exclude];
}
