// The load generator's side of the wire protocol (lib/protocol/): the
// frames it sends, and a reader for the one frame that is on the hot path.
// Every published `data` object is {"t":<send time, µs since the epoch>,
// "p":<publisher>,"n":<publisher's counter>,"x":"<padding>"}; the gateway
// serialises it once and passes it through unchanged, so receivers can read
// the send time back without parsing the whole frame.
import { performance } from 'node:perf_hooks';

/** Ids that tell which request an ack or error answers. */
export const SUBSCRIBE_ID = 1;
export const PUBLISH_ID = 2;
export const RESUBSCRIBE_ID = 3; // a subscribe with since, after a reconnect
export const AUTH_ID = 4;

const MESSAGE = Buffer.from('{"type":"message",');
const EVENT = Buffer.from('id: '); // an SSE message event: its id line, then its data
const SEQ = Buffer.from('"seq":');
const SENT = Buffer.from('"data":{"t":'); // never inside a delta's string, where quotes are escaped
const DELTA = '"delta":"fossil",';

/** Microseconds since the epoch, comparable across this machine's processes. */
export function nowUs() {
  return Math.round((performance.timeOrigin + performance.now()) * 1000);
}

export function channelName(prefix, index) {
  return `${prefix}${index}`;
}

/** The padding that brings a data object to about `size` bytes. */
export function padding(size) {
  return 'x'.repeat(Math.max(0, size - dataJson(nowUs(), 0, 0, '').length));
}

export function dataJson(sentUs, publisher, counter, pad) {
  return `{"t":${sentUs},"p":${publisher},"n":${counter},"x":"${pad}"}`;
}

export function authFrame(token) {
  return `{"type":"auth","token":"${token}","id":${AUTH_ID}}`;
}

/** @param {boolean} [delta] later messages as fossil deltas, where smaller */
export function subscribeFrame(channel, delta = false) {
  return `{"type":"subscribe","channel":"${channel}",${delta ? DELTA : ''}"id":${SUBSCRIBE_ID}}`;
}

/** A subscribe that asks for what was missed after `seq` of `epoch`. */
export function resubscribeFrame(channel, seq, epoch, delta = false) {
  return `{"type":"subscribe","channel":"${channel}","since":{"seq":${seq},"epoch":"${epoch}"},${delta ? DELTA : ''}"id":${RESUBSCRIBE_ID}}`;
}

export function publishFrame(channel, data) {
  return `{"type":"publish","channel":"${channel}","id":${PUBLISH_ID},"data":${data}}`;
}

export function publishBody(channel, data) {
  return `{"channel":"${channel}","data":${data}}`;
}

/**
 * Reads `seq` and the send time of a message frame (or an SSE message
 * event) into `out` ({seq, sentUs}; sentUs is -1 when the data is
 * not ours) without allocating.
 * @returns {boolean} false when `buf` is not a message
 */
export function readMessage(buf, out) {
  if (!startsWith(buf, MESSAGE) && !startsWith(buf, EVENT)) return false;
  const seqAt = buf.indexOf(SEQ, EVENT.length);
  if (seqAt === -1) return false;
  out.seq = readInteger(buf, seqAt + SEQ.length);
  const sentAt = buf.indexOf(SENT, seqAt);
  out.sentUs = sentAt === -1 ? -1 : readInteger(buf, sentAt + SENT.length);
  return out.seq >= 0;
}

function startsWith(buf, prefix) {
  return buf.length >= prefix.length && buf.compare(prefix, 0, prefix.length, 0, prefix.length) === 0;
}

/** The non-negative decimal integer at `at`, or -1. */
export function readInteger(buf, at) {
  let value = 0;
  let i = at;
  for (; i < buf.length; i++) {
    const digit = buf[i] - 48;
    if (digit < 0 || digit > 9) break;
    value = value * 10 + digit;
  }
  return i === at ? -1 : value;
}
