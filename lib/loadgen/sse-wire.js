// The load generator's side of GET /sse (lib/native/sse.js): the request, the
// response head, and the events, read without a parser library so one
// process holds as many streams as it holds WebSockets.
const HEADER_END = Buffer.from('\r\n\r\n');
const EVENT_END = Buffer.from('\n\n');
const DATA = Buffer.from('data: ');
const ID = Buffer.from('id: ');
const READY = Buffer.from('event: ready\n');
const GAP = Buffer.from('event: gap\n');
const MAX_RESPONSE_HEAD = 4096;
// `event: gap` (the missed messages cannot be replayed) reads as this frame.
const GAP_FRAME = Buffer.from('{"type":"gap"}');

/**
 * A stream on one channel; a re-dial resumes from `lastEventId`, the id of
 * the last event it read (`seq.epoch`). A token goes in the URL, as an
 * EventSource's must.
 */
export function streamRequest(url, channel, lastEventId, token) {
  const auth = token === undefined ? '' : `&token=${token}`;
  const resume = lastEventId === undefined ? '' : `Last-Event-ID: ${lastEventId}\r\n`;
  return `GET /sse?channels=${channel}${auth} HTTP/1.1\r\nHost: ${url.host}\r\nAccept: text/event-stream\r\n${resume}\r\n`;
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
 * message's whole event (`id:` line and data); for `ready` the frame {"type":"ready","seq","epoch"} read
 * from its id (where the channel stands, as a subscribe's ack says), for
 * `gap` {"type":"gap"}. Comments (`: ping`) and the `retry:` line are skipped.
 * @returns {number} where the incomplete rest begins
 */
export function readEvents(buf, at, table, k) {
  for (let end = buf.indexOf(EVENT_END, at); end !== -1; at = end + 2, end = buf.indexOf(EVENT_END, at)) {
    const data = buf.indexOf(DATA, at);
    if (data === -1 || data > end) continue;
    if (!isEvent(buf, READY, at, data)) table.onText(k, isEvent(buf, GAP, at, data) ? GAP_FRAME : buf.subarray(at, end));
    else table.onText(k, readyFrame(buf, at, data));
  }
  return at;
}

function isEvent(buf, name, at, data) {
  const found = buf.indexOf(name, at);
  return found !== -1 && found < data;
}

/** Once per stream opened: the ready event's id, one channel's `seq.epoch`. */
function readyFrame(buf, at, data) {
  const id = buf.indexOf(ID, at);
  const [seq, epoch] = id === -1 || id > data ? [] : eventId(buf, id).split('.');
  return Buffer.from(`{"type":"ready","seq":${Number(seq ?? 0)},"epoch":"${epoch ?? ''}"}`);
}

/** The epoch in the id of a message event (as onText is given it): rarely needed, when a sequence starts over. */
export function eventEpoch(event) {
  const id = eventId(event, 0);
  return id.slice(id.indexOf('.') + 1);
}

function eventId(buf, at) {
  return buf.toString('latin1', at + ID.length, buf.indexOf(10, at));
}
