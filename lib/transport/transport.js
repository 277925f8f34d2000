// The transport interface: what subscriptions, fan-out, keepalive, deadlines,
// limits and the drain may do with a connection, whatever carries it. A
// WebSocket (./ws-transport.js) and an SSE stream (./sse-stream.js) differ in
// how a message's bytes are framed and written, not in anything else.
//
// A transport is a descriptor per kind, hung on the connection class's
// prototype under kTransport: finding it costs a connection nothing. The
// rules it carries:
// - a message is encoded once per worker per transport (`encode`), and each
//   connection gets those bytes, or a variant built from them, through
//   `writeMessage`;
// - every write goes through writeBytes below, which coalesces a turn's
//   writes to one connection (./coalesce.js, up to HELD_BYTES) and closes a
//   slow consumer (more than --max-buffered bytes waiting once the held ones
//   went to the kernel) with 1013, so the others are not held back;
// - `answersPings`: the peer of such a transport answers each ping, and one
//   that has not answered the previous ping is dead (the keepalive wheel
//   terminates it); the others are pinged only to keep proxies from timing
//   the connection out, and a dead peer fails at the write.
import { CloseCode } from '../core/errors.js';
import { addBytesSource, metrics, reportBytes } from '../session/metrics.js';
import { kCarries, kSession, kTransport } from '../core/symbols.js';

// Bytes a connection's writes may hold within a turn before they go out (a
// burst of thousands of messages is written in pieces this size).
const HELD_BYTES = 64 * 1024;

/**
 * @typedef {object} Transport
 * @property {'ws'|'ws-msgpack'|'sse'} name
 * @property {'json'|'msgpack'} encoding the label of gateway_bytes_sent_total
 * @property {(data: Buffer, isBinary: boolean) => object} [decode] a client
 *   frame into a command (../protocol/client-frame.js's checkClientFrame shape); transports that take frames
 * @property {number} index small and unique: fan-out keeps one encoding per transport by it
 * @property {boolean} answersPings see above
 * @property {boolean} channelsFixed its channels are set when it opens (an
 *   SSE stream's, by its URL): the server API neither adds nor removes any
 * @property {Buffer} ping the bytes of one keepalive ping
 * @property {(channel: string, seq: number, epoch: string, dataJson: string) => any} encode
 *   one message, for every connection of this transport on the worker
 * @property {(channel: string, seq: number, delta: Uint8Array) => any} [encodeDelta] one
 *   message as a delta against the one before (../session/deltas.js), where deltas are offered
 * @property {(conn: object, encoded: any, maxBuffered: number) => boolean} writeMessage
 * @property {(kind: 'presence_diff', frame: string) => Buffer} encodeEvent a
 *   frame that is not a message (no seq, no cursor: a presence_diff from
 *   lib/engines/join-leave.js), for every connection of this transport on
 *   the worker; `kind` names it (SSE's `event:`)
 * @property {(conn: object, bytes: Buffer|string, maxBuffered: number) => boolean} write
 *   pre-encoded bytes; false when the connection is no longer open
 * @property {(conn: object) => number} buffered bytes waiting to be written
 * @property {(conn: object) => boolean} isOpen
 * @property {(conn: object) => boolean} isClosed closed for good (the drain waits for it)
 * @property {(conn: object, code: number, reason: string) => void} close
 * @property {(conn: object) => void} terminate closes at once, dropping what waits
 */

/** Every transport, by index. */
export const TRANSPORTS = [];

// Bytes written, by transport index: plain numbers on the hot path, summed
// by encoding when the metrics are collected.
const bytesSent = [];

addBytesSource((counter) => {
  for (const t of TRANSPORTS) reportBytes(counter, t, bytesSent[t.index]);
});

/**
 * Registers a transport and hangs it on the prototype of its connections.
 * @param {Function} Connection the class of its connections
 * @param {Omit<Transport, 'index'>} descriptor
 * @returns {Transport}
 */
export function defineTransport(Connection, descriptor) {
  const transport = Object.freeze({ ...descriptor, index: TRANSPORTS.length });
  TRANSPORTS.push(transport);
  bytesSent.push(0);
  Object.defineProperty(Connection.prototype, kTransport, { value: transport });
  return transport;
}

/**
 * Writes bytes to the socket of an open connection, with the rest of its
 * turn's (its way in's coalescer: ./coalesce.js); closes a slow consumer.
 * @returns {boolean} true: the bytes were written
 */
export function writeBytes(conn, socket, bytes, maxBuffered) {
  conn[kSession].way.coalescer.fanOut(socket);
  countSent(conn, bytes);
  socket.write(bytes);
  if (socket.writableLength <= Math.min(HELD_BYTES, maxBuffered)) return true;
  // A burst goes to the kernel as it comes, HELD_BYTES at a time, not all at
  // the end of the turn: only what the peer does not read makes a slow
  // consumer (checked as soon as --max-buffered could be passed, below HELD_BYTES too).
  socket.uncork();
  if (socket.writableLength > maxBuffered) {
    metrics.dropped.inc({ reason: 'slow_consumer' });
    conn[kTransport].close(conn, CloseCode.TRY_AGAIN, 'slow consumer');
  }
  return true;
}

/** Adds what a connection is sent to its transport's total (read by gateway_bytes_sent_total). */
export function countSent(conn, bytes) {
  const n = typeof bytes === 'string' ? Buffer.byteLength(bytes) : bytes.length;
  bytesSent[conn[kTransport].index] += n;
  // A connection of a way in with apps, once it has one (lib/pusher/session.js);
  // none for a socket refused at the door, which has no session.
  const app = conn[kSession]?.appFigures;
  if (app !== undefined) app.bytes += n;
}

/**
 * Marks a socket a connection has taken over (an SSE stream writes its events
 * to the raw socket): the HTTP server must neither answer nor parse on it.
 */
export function carry(socket, conn) {
  socket[kCarries] = conn;
}

/** @returns {object|undefined} the connection that owns this socket's bytes, if any */
export function carriedBy(socket) {
  return socket[kCarries];
}
