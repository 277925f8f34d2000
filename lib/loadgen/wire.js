// The WebSocket wire format (RFC 6455), client side, as lean as holding tens
// of thousands of connections per process asks: the opening handshake is one
// write and one parse, and frames are read in place from the socket's chunks.
// A `ws` client object costs about 5.7 KiB per connection; a bare socket and
// these functions cost about half that. Only what a load generator needs is
// here: text or binary frames out, data and control frames in, no extensions.
import crypto from 'node:crypto';

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
const HEADER_END = Buffer.from('\r\n\r\n');
/** Longest handshake response accepted before giving up on it. */
const MAX_RESPONSE_HEAD = 8192;
/** Largest incoming frame accepted. */
const MAX_PAYLOAD = 64 * 1024 * 1024;

export const Opcode = Object.freeze({ CONTINUATION: 0, TEXT: 1, BINARY: 2, CLOSE: 8, PING: 9, PONG: 10 });

export function newKey() {
  return crypto.randomBytes(16).toString('base64');
}

/** @param {string} [protocol] the Sec-WebSocket-Protocol to ask for (none: the gateway's JSON) */
export function handshakeRequest(url, key, protocol) {
  return (
    `GET ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
    `Sec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n${protocol === undefined ? '' : `Sec-WebSocket-Protocol: ${protocol}\r\n`}\r\n`
  );
}

/**
 * Reads the server's answer to the handshake.
 * @returns {undefined|{end: number, error?: string}} undefined while incomplete;
 *   `end` is where the frames begin; `error` is set when the upgrade failed
 *   (`HTTP 503` for a refusal, so failures are counted by status)
 */
export function readHandshake(buf, key) {
  const at = buf.indexOf(HEADER_END);
  if (at === -1) return buf.length > MAX_RESPONSE_HEAD ? { end: buf.length, error: 'bad handshake' } : undefined;
  const head = buf.toString('latin1', 0, at);
  const status = Number(head.slice(9, 12));
  if (status !== 101) return { end: at + 4, error: `HTTP ${Number.isInteger(status) ? status : '?'}` };
  const accept = /^sec-websocket-accept:\s*(\S+)/im.exec(head)?.[1];
  const expected = crypto.createHash('sha1').update(key + GUID).digest('base64');
  return { end: at + 4, error: accept === expected ? undefined : 'bad Sec-WebSocket-Accept' };
}

/**
 * Parses the frame header at `at` into `out` ({fin, opcode, start, end} of
 * the payload) without allocating.
 * @returns {number} where the next frame begins, -1 if this one is incomplete,
 *   -2 if it is not acceptable (masked by the server, or too large)
 */
export function readFrame(buf, at, out) {
  if (buf.length - at < 2) return -1;
  const b0 = buf[at];
  const b1 = buf[at + 1];
  if (b1 & 0x80) return -2;
  let length = b1 & 0x7f;
  let start = at + 2;
  if (length === 126) {
    if (buf.length < start + 2) return -1;
    length = buf.readUInt16BE(start);
    start += 2;
  } else if (length === 127) {
    if (buf.length < start + 8) return -1;
    if (buf.readUInt32BE(start) !== 0) return -2;
    length = buf.readUInt32BE(start + 4);
    start += 8;
  }
  if (length > MAX_PAYLOAD) return -2;
  if (buf.length < start + length) return -1;
  out.fin = (b0 & 0x80) !== 0;
  out.opcode = b0 & 0x0f;
  out.start = start;
  out.end = start + length;
  return out.end;
}

/** A masked client frame, as RFC 6455 requires of clients. */
export function encodeFrame(opcode, payload) {
  const length = payload.length;
  const extra = length < 126 ? 0 : length < 65536 ? 2 : 8;
  const frame = Buffer.allocUnsafe(6 + extra + length);
  frame[0] = 0x80 | opcode;
  if (extra === 0) frame[1] = 0x80 | length;
  else if (extra === 2) {
    frame[1] = 0x80 | 126;
    frame.writeUInt16BE(length, 2);
  } else {
    frame[1] = 0x80 | 127;
    frame.writeUInt32BE(0, 2);
    frame.writeUInt32BE(length, 6);
  }
  const maskAt = 2 + extra;
  crypto.randomFillSync(frame, maskAt, 4);
  for (let i = 0; i < length; i++) frame[maskAt + 4 + i] = payload[i] ^ frame[maskAt + (i & 3)];
  return frame;
}

export function textFrame(text) {
  return encodeFrame(Opcode.TEXT, Buffer.from(text));
}

export function closeFrame(code) {
  const payload = Buffer.allocUnsafe(2);
  payload.writeUInt16BE(code);
  return encodeFrame(Opcode.CLOSE, payload);
}
