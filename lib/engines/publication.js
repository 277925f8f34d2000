// A publish in an engine (./index.js, Engine.publish): who waits for its
// result, and the message it makes. What it carries and answers are the
// core's types (Publication, PublishResult: lib/core/seams.js).
import { Op } from '../core/ipc.js';

/**
 * Who waits for a publish's result: answered once, with the result once the
 * engine has stored the message (an acknowledgement means stored), or with
 * null when it refused or failed it (the message may still have been
 * published: a retry with the same idempotency key is safe). An object
 * rather than a callback, so the relay's reply costs no closure.
 * @typedef {{answered: (result: import('../core/seams.js').PublishResult | null) => void}} PublishReply
 */

/**
 * Every engine answers with this one shape (the same fields in the same
 * order), so the code that reads answers sees one kind of object.
 * @returns {import('../core/seams.js').PublishResult}
 */
export function publishResult(seq, epoch, skipped = undefined) {
  return { seq, epoch, skipped };
}

/** A channel's message for its routes: [Op.MSG, channel, seq, data], `exclude` appended when there is one. */
export function messageOp(channel, seq, data, exclude) {
  return exclude === undefined ? [Op.MSG, channel, seq, data] : [Op.MSG, channel, seq, data, exclude];
}
