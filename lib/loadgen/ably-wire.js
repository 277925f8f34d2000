// The load generator's side of Ably's protocol (lib/ably/): the URL a
// connection dials (a key, JSON frames, no protocol heartbeats: WebSocket
// pings keep it, as ably-js in Node does), its ATTACH, the reader for a
// MESSAGE on the hot path, and the REST publish. A message's data is the
// same data object the native runs publish ({"t","p","n","x"}), so the send
// time is read back without parsing. Counted as Pusher's are: a run counts
// what arrives against what was published.
import { readInteger, SUBSCRIBE_ID } from './frames.js';

const MESSAGE = Buffer.from('{"action":15,');
const SENT = Buffer.from('"data":{"t":');
const ATTACHED = 11;
const ERROR = 9;

/** Where an Ably client with `key` connects, on --url's host. */
export function ablyUrl(url, key) {
  return new URL(`/?v=6&format=json&heartbeats=false&key=${encodeURIComponent(key)}`, url).href;
}

export function ablySubscribeFrame(channel) {
  return `{"action":10,"channel":"${channel}"}`;
}

/**
 * Reads the send time of a MESSAGE into `out` ({seq, sentUs}: seq 1 for
 * every message, sentUs -1 when the data is not ours) without allocating.
 * @returns {boolean} false when `buf` is not a MESSAGE
 */
export function readAblyMessage(buf, out) {
  if (buf.length < MESSAGE.length || buf.compare(MESSAGE, 0, MESSAGE.length, 0, MESSAGE.length) !== 0) return false;
  const sentAt = buf.indexOf(SENT, MESSAGE.length);
  out.seq = 1;
  out.sentUs = sentAt === -1 ? -1 : readInteger(buf, sentAt + SENT.length);
  return true;
}

/** An Ably control frame as the pool reads the native ones: an attach's answer, or nothing it tracks. */
export function ablyControl(buf) {
  let frame;
  try {
    frame = JSON.parse(buf);
  } catch {
    return {};
  }
  if (frame.action === ATTACHED) return { type: 'ack', id: SUBSCRIBE_ID };
  if (frame.action === ERROR && frame.channel !== undefined) return { type: 'error', id: SUBSCRIBE_ID, code: `ably ${frame.error?.code}` };
  return {};
}

/**
 * One REST publish, POST /channels/<name>/messages (the key goes in its Basic header).
 * @returns {{path: string, body: string}}
 */
export function restMessage(channel, dataJson) {
  return { path: `/channels/${encodeURIComponent(channel)}/messages`, body: `{"name":"m","data":${dataJson}}` };
}
