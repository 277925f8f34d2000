// The SSE cursor, the `id:` of every event, which a reconnecting EventSource
// sends back as Last-Event-ID: each channel of the stream's query, in query
// order, as `seq.epoch`, comma separated; empty for a channel whose position
// is not known yet. Positional, so it stays short whatever the channel
// names; a cursor replayed against other channels meets other epochs and
// reads as a gap, never as someone else's messages. Written by
// ../transport/sse-stream.js, read by ../native/sse.js.
import { ErrorCode, GatewayError } from '../core/errors.js';

/** @param {Array<{seq: number, epoch: string}|null>} positions */
export function formatCursor(positions) {
  let text = '';
  for (let i = 0; i < positions.length; i++) {
    const p = positions[i];
    if (i > 0) text += ',';
    if (p !== null) text += `${p.seq}.${p.epoch}`;
  }
  return text;
}

// An entry is at most 16 digits, a dot and a 16-character epoch.
const CURSOR_ENTRY = /^(?:(\d{1,16})\.([0-9a-z]{1,16}))?$/;

/**
 * Reads a Last-Event-ID for a stream on `count` channels.
 * @returns {Array<{seq: number, epoch: string}|undefined>} where to resume each channel from
 * @throws {GatewayError} bad_request for anything but a cursor of `count` entries
 */
export function parseCursor(text, count) {
  const entries = text.length <= count * 34 ? text.split(',') : [];
  if (entries.length !== count) {
    throw new GatewayError(ErrorCode.BAD_REQUEST, `Last-Event-ID must be a cursor of this stream's ${count} channel(s)`);
  }
  return entries.map((entry) => {
    const match = CURSOR_ENTRY.exec(entry);
    const seq = match === null ? NaN : Number(match[1] ?? 0);
    if (!Number.isSafeInteger(seq)) throw new GatewayError(ErrorCode.BAD_REQUEST, 'Last-Event-ID is not a cursor this gateway wrote');
    return match[1] === undefined ? undefined : { seq, epoch: match[2] };
  });
}
