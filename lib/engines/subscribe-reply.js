// An engine's answer to a subscribe, the same for every engine: where the
// channel stands, and with `since` whether the client recovers (the rules are
// in ./index.js). In a `latest` namespace a subscribe without `since` also
// gets the channel's latest message, while the history holds it: a replay
// of one.
import { Recovery } from '../protocol/outcomes.js';

/**
 * @param {string} epoch the channel's
 * @param {number} seq the channel's latest
 * @param {{seq: number, epoch: string} | undefined} since
 * @param {(after: number) => string[] | undefined} missed the data after a
 *   seq up to `seq`, or undefined when the history no longer reaches back that far
 * @param {boolean} [latest] the channel's namespace has `latest`
 * @returns {{epoch: string, seq: number, result?: string, replay?: string[]}}
 */
export function subscribeReply(epoch, seq, since, missed, latest) {
  if (since === undefined) {
    const last = latest && seq > 0 ? missed(seq - 1) : undefined;
    return last === undefined ? { epoch, seq } : { epoch, seq, replay: last };
  }
  // A seq ahead of the channel's is not from this epoch either.
  if (since.epoch !== epoch || since.seq > seq) return { epoch, seq, result: Recovery.EPOCH_CHANGED };
  if (since.seq === seq) return { epoch, seq, result: Recovery.RECOVERED, replay: [] };
  const replay = missed(since.seq);
  if (replay === undefined) return { epoch, seq, result: Recovery.TOO_OLD };
  return { epoch, seq, result: Recovery.RECOVERED, replay };
}
