// What a publish carries into an engine, and what the engine answers
// (./index.js, Engine.publish).

/**
 * @typedef {object} Publication
 * @property {string} channel
 * @property {string} data the message, serialised (JSON)
 * @property {string} [idempotencyKey] a retry with the same key on the same
 *   channel within the window publishes nothing (./idempotency.js)
 * @property {number} [version] published only above the channel's last accepted version
 *
 * @typedef {object} PublishResult
 * @property {number} seq the publish's place in its channel's sequence; for a skipped one, the first publish's (duplicate) or where the channel stands (stale)
 * @property {string} epoch the sequence `seq` belongs to
 * @property {string | undefined} skipped 'duplicate' or 'stale' (Skipped in ../protocol/outcomes.js): nothing was published
 */

/**
 * Every engine answers with this one shape (the same fields in the same
 * order), so the code that reads answers sees one kind of object.
 * @returns {PublishResult}
 */
export function publishResult(seq, epoch, skipped = undefined) {
  return { seq, epoch, skipped };
}
