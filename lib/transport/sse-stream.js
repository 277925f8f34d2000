// One Server-Sent Events stream, and the SSE transport (./transport.js): so
// a stream sits in the same subscription table, keepalive wheel and fan-out
// as a WebSocket, and the drain, the deadlines and POST /disconnect close it
// the same way.
//
// The response is written straight to the socket and delimited by its close
// (`Connection: close`, no chunked framing), so an event is the same bytes
// on every stream of the worker and HTTP/1.0 clients and proxies read it too.
import { CloseCode } from '../core/errors.js';
import { formatCursor } from '../protocol/cursor.js';
import { defineTransport, writeBytes } from './transport.js';
import { kSession } from '../core/symbols.js';

const OPEN = 1;
const CLOSING = 2;
const CLOSED = 3;

export class SseStream {
  /**
   * @param {import('node:net').Socket} socket taken over from the HTTP server
   * @param {string[]} channels the query's channels, in its order (the cursor's order)
   */
  constructor(socket, channels) {
    this.socket = socket; // carried by the stream (./transport.js carry) once it opens
    this.state = OPEN;
    this.channels = channels;
    // Per channel, what says where the stream stands: null (not known yet),
    // the Last-Event-ID's {seq, epoch} while its recovery is under way, or
    // the LocalChannel itself once live (its seq and epoch are the stream's).
    this.positions = new Array(channels.length).fill(null);
    this.pending = channels.length; // subscribes not answered yet
    this.closeCode = 1000; // the client ended it, unless the gateway says otherwise
    this[kSession] = undefined; // its session (lib/core/session.js), from lib/native/sse.js's begin()
  }

  close(code) {
    if (this.state !== OPEN) return;
    this.state = CLOSING;
    this.closeCode = code;
    // A slow consumer's backlog is dropped, not flushed; anything else ends
    // after what was written (EventSource then reconnects with its cursor).
    if (code === CloseCode.TRY_AGAIN) this.socket.destroy();
    else this.socket.end();
  }

  /** The socket closed: nothing more is written. */
  closed() {
    this.state = CLOSED;
  }
}

function write(stream, bytes, maxBuffered) {
  return stream.state === OPEN && writeBytes(stream, stream.socket, bytes, maxBuffered);
}

export const sseTransport = defineTransport(SseStream, {
  name: 'sse',
  encoding: 'json', // events carry the JSON encoding's text
  answersPings: false,
  channelsFixed: true,
  ping: Buffer.from(': ping\n\n'), // a comment line: proxies see traffic, EventSource ignores it
  // The data is encoded once; the streams on this channel alone (most) share
  // one whole event, built on first use; a stream on several channels gets
  // its own `id:` line, since its cursor holds every channel's position.
  encode: (channel, seq, epoch, dataJson) => ({ id: `${seq}.${epoch}`, data: eventData(channel, seq, dataJson), single: undefined }),
  writeMessage(stream, message, maxBuffered) {
    const event =
      stream.channels.length === 1 ? (message.single ??= Buffer.from(`id: ${message.id}\n${message.data}`)) : withCursor(stream, message.data);
    return write(stream, event, maxBuffered);
  },
  // No `id:` line: a presence_diff moves no cursor and is never replayed.
  encodeEvent: (kind, frame) => Buffer.from(`event: ${kind}\ndata: ${frame}\n\n`),
  write,
  buffered: (stream) => stream.socket.writableLength,
  // Before it opens, a stream is open while its request's socket is.
  isOpen: (stream) => stream.state === OPEN && !stream.socket.destroyed,
  isClosed: (stream) => stream.state === CLOSED,
  close: (stream, code) => stream.close(code),
  terminate: (stream) => stream.socket.destroy()
});

/** The `data:` line and end of one message's event; the `id:` goes in front. */
export function eventData(channel, seq, dataJson) {
  // Channel names are validated to need no escaping; JSON holds no raw newline.
  return `data: {"channel":"${channel}","seq":${seq},"data":${dataJson}}\n\n`;
}

/** The rest of an event, after the `id:` line of the stream's cursor. */
export function withCursor(stream, rest) {
  return `id: ${formatCursor(stream.positions)}\n${rest}`;
}

/**
 * `event: ready`, once every channel of the stream is live: its id is the
 * full cursor, so a reconnect from here on loses nothing even before the
 * first message, and a client learns where each channel stands; its data
 * the stream's connectionId (the client id presence and join/leave show).
 */
export function readyEvent(stream, client) {
  return withCursor(stream, `event: ready\ndata: {"connectionId":"${client}"}\n\n`);
}

/** `event: gap`: the channel's missed messages cannot be replayed; the application refetches. */
export function gapEvent(stream, channel) {
  return withCursor(stream, `event: gap\ndata: {"channel":"${channel}"}\n\n`);
}
