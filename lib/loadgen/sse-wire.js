// The load generator's side of GET /sse (lib/worker/sse.js): the request, the
// response head, and the events, read without a parser library so one
// process holds as many streams as it holds WebSockets.
import { SUBSCRIBE_ID } from './frames.js';

const HEADER_END = Buffer.from('\r\n\r\n');
const EVENT_END = Buffer.from('\n\n');
const DATA = Buffer.from('data: ');
const READY = Buffer.from('event: ready\n');
const MAX_RESPONSE_HEAD = 4096;
// The `ready` event reads as the ack of a WebSocket subscribe.
const READY_ACK = Buffer.from(`{"type":"ack","id":${SUBSCRIBE_ID}}`);

/** A stream on one channel. */
export function streamRequest(url, channel) {
  return `GET /sse?channels=${channel} HTTP/1.1\r\nHost: ${url.host}\r\nAccept: text/event-stream\r\n\r\n`;
}

/**
 * Reads the response head, as readHandshake does for a WebSocket.
 * @returns {undefined|{end: number, error?: string}}
 */
export function readStreamHead(buf) {
  const at = buf.indexOf(HEADER_END);
  if (at === -1) return buf.length > MAX_RESPONSE_HEAD ? { end: buf.length, error: 'bad response' } : undefined;
  const status = Number(buf.toString('latin1', 9, 12));
  return { end: at + 4, error: status === 200 ? undefined : `HTTP ${Number.isInteger(status) ? status : '?'}` };
}

/**
 * Hands each complete event from `at` on to `table.onText(k, payload)`: a
 * message's data, or for `ready` a subscribe's ack; comments (`: ping`) and
 * the `retry:` line are skipped.
 * @returns {number} where the incomplete rest begins
 */
export function readEvents(buf, at, table, k) {
  for (let end = buf.indexOf(EVENT_END, at); end !== -1; at = end + 2, end = buf.indexOf(EVENT_END, at)) {
    const data = buf.indexOf(DATA, at);
    if (data === -1 || data > end) continue;
    const ready = buf.indexOf(READY, at);
    table.onText(k, ready !== -1 && ready < data ? READY_ACK : buf.subarray(data + DATA.length, end));
  }
  return at;
}
