// Channel params `rewind` (ATTACH `params: {rewind}`): a fresh attach starts
// that far back in the channel's history, `N` messages (at most 100) or a
// time (`30s`, `2m`, `1h`), and the client gets them after ATTACHED (flagged
// HAS_BACKLOG), oldest first, then the live ones: a join whose `since` is
// where the backlog starts, so the core replays it and the live messages
// follow with nothing lost or twice between. Presence events in that stretch
// come with it; only messages are counted.
import { AblyCode, AblyError } from './errors.js';
import { isPresenceEvent } from './presence.js';

const MAX_MESSAGES = 100;
const UNIT_MS = { s: 1000, m: 60000, h: 3600000 };
const REWIND = /^(\d{1,9})([smh]?)$/;

/**
 * @param {*} params an ATTACH's params
 * @returns {{count: number}|{ms: number}|undefined} the rewind asked for; undefined: none
 * @throws {AblyError} 40003 for a rewind that is neither
 */
export function rewindOf(params) {
  const value = params !== null && typeof params === 'object' ? params.rewind : undefined;
  if (value === undefined) return undefined;
  const match = typeof value === 'string' ? REWIND.exec(value) : null;
  if (match === null) throw new AblyError(AblyCode.BAD_PARAMETER, 'rewind is a number of messages or a time: 30s, 2m, 1h');
  const amount = Number(match[1]);
  if (amount === 0) return undefined;
  return match[2] === '' ? { count: Math.min(amount, MAX_MESSAGES) } : { ms: amount * UNIT_MS[match[2]] };
}

/**
 * @param {import('../worker/relay.js').WorkerRelay} relay
 * @param {{count: number}|{ms: number}} rewind
 * @param {number} historySize what the channel's history holds at most
 * @returns {Promise<{epoch: string, seq: number}|undefined>} the `since` of a join that replays the backlog; undefined: nothing to replay
 */
export async function rewindSince(relay, channel, rewind, historySize) {
  if (historySize === 0) return undefined;
  const { epoch, messages } = await relay.history(channel, { limit: historySize, reverse: true });
  const after = rewind.ms === undefined ? undefined : Date.now() - rewind.ms;
  let first;
  let counted = 0;
  for (const { seq, data } of messages) {
    if (!isPresenceEvent(data)) {
      if (counted === rewind.count || (after !== undefined && JSON.parse(data).timestamp < after)) break;
      counted++;
    }
    first = seq;
  }
  return first === undefined ? undefined : { epoch, seq: first - 1 };
}
