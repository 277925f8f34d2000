// The server API's history read, the same for every engine: an engine finds
// where the channel stands and the entries its history holds, this picks
// what the query asks for. The rules: a `since` from another epoch (or ahead
// of the channel) is `epoch_changed`, one older than the history reaches is
// `too_old`: never a silent gap. Without `since`, the latest `limit`.
import { ErrorCode, GatewayError } from '../core/errors.js';

/**
 * @param {string} epoch the channel's
 * @param {number} seq its latest
 * @param {Array<[number, string]>} entries [seq, dataJson] held, oldest first, ending at seq
 * @param {{since?: {seq: number, epoch: string}, limit?: number, reverse?: boolean}} query
 * @returns {{epoch: string, seq: number, messages: Array<{seq: number, data: string}>} | GatewayError} a refusal as its error
 *   `data` stays serialised: the worker writes it into its answer as it is
 */
export function historyAnswer(epoch, seq, entries, { since, limit, reverse }) {
  let picked = entries;
  if (since !== undefined) {
    if (since.epoch !== epoch || since.seq > seq) {
      return new GatewayError(ErrorCode.EPOCH_CHANGED, `since is not from this sequence of the channel (epoch ${epoch}, seq ${seq}): refetch`);
    }
    const first = entries.length === 0 ? seq + 1 : entries[0][0];
    if (since.seq + 1 < first) return new GatewayError(ErrorCode.TOO_OLD, `the history starts at seq ${first}, after since.seq + 1`);
    picked = entries.slice(since.seq + 1 - first);
  }
  if (limit !== undefined && picked.length > limit) {
    // After a since: the oldest first, as a reader catching up wants them; otherwise the latest.
    picked = since !== undefined && !reverse ? picked.slice(0, limit) : picked.slice(picked.length - limit);
  }
  const messages = picked.map(([s, data]) => ({ seq: s, data }));
  if (reverse) messages.reverse();
  return { epoch, seq, messages };
}
