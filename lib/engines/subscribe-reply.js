// An engine's answer to a subscribe, the same for every engine: where the
// channel stands, and with `since` whether the client recovers (the rules are
// in ./index.js).
import { Recovery } from '../protocol.js';

/**
 * @param {string} epoch the channel's
 * @param {number} seq the channel's latest
 * @param {{seq: number, epoch: string} | undefined} since
 * @param {() => string[] | undefined} missed the data after since.seq up to
 *   seq, or undefined when the history no longer reaches back that far
 * @returns {{epoch: string, seq: number, result?: string, replay?: string[]}}
 */
export function subscribeReply(epoch, seq, since, missed) {
  if (since === undefined) return { epoch, seq };
  // A seq ahead of the channel's is not from this epoch either.
  if (since.epoch !== epoch || since.seq > seq) return { epoch, seq, result: Recovery.EPOCH_CHANGED };
  if (since.seq === seq) return { epoch, seq, result: Recovery.RECOVERED, replay: [] };
  const replay = missed();
  if (replay === undefined) return { epoch, seq, result: Recovery.TOO_OLD };
  return { epoch, seq, result: Recovery.RECOVERED, replay };
}
