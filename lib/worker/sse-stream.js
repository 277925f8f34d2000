// One Server-Sent Events stream, shaped like the part of ws's WebSocket that
// the shared machinery uses: `readyState`, `_socket` (./frames.js writeFrame
// writes pre-encoded bytes to it and reads its backlog), `close(code, reason)`
// and `terminate()` (the slow-consumer cut, the drain, the deadlines,
// POST /disconnect). So a stream sits in the same subscription table,
// keepalive wheel and fan-out as a WebSocket, and `sse: true` tells the few
// places that differ.
//
// The response is written straight to the socket and delimited by its close
// (`Connection: close`, no chunked framing), so an event is the same bytes
// on every stream of the worker and HTTP/1.0 clients and proxies read it too.
import { require } from '../require.js';
import { CloseCode, formatCursor } from '../protocol.js';
import { writeFrame } from './frames.js';

const { WebSocket } = require('ws');

const kStream = Symbol('sseStream'); // on the socket: the stream it carries

export class SseStream {
  static OPEN = WebSocket.OPEN;
  static CLOSED = WebSocket.CLOSED;

  /**
   * @param {import('node:net').Socket} socket
   * @param {string[]} channels the query's channels, in its order (the cursor's order)
   */
  constructor(socket, channels) {
    this._socket = socket;
    socket[kStream] = this;
    this.readyState = WebSocket.OPEN;
    this.channels = channels;
    // Per channel, what says where the stream stands: null (not known yet),
    // the Last-Event-ID's {seq, epoch} while its recovery is under way, or
    // the LocalChannel itself once live (its seq and epoch are the stream's).
    this.positions = new Array(channels.length).fill(null);
    this.pending = channels.length; // subscribes not answered yet
    this.closeCode = 1000; // the client ended it, unless the gateway says otherwise
  }

  close(code) {
    if (this.readyState !== WebSocket.OPEN) return;
    this.readyState = WebSocket.CLOSING;
    this.closeCode = code;
    // A slow consumer's backlog is dropped, not flushed; anything else ends
    // after what was written (EventSource then reconnects with its cursor).
    if (code === CloseCode.TRY_AGAIN) this._socket.destroy();
    else this._socket.end();
  }

  terminate() {
    this._socket.destroy();
  }
}
SseStream.prototype.sse = true;

/** @returns {SseStream|undefined} the stream a socket carries: nothing else may be written to it */
export function streamOf(socket) {
  return socket[kStream];
}

/** The `: ping` comment the keepalive wheel writes to streams. */
export const PING_COMMENT = Buffer.from(': ping\n\n');

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
 * first message, and a client learns where each channel stands.
 */
export function readyEvent(stream) {
  return withCursor(stream, 'event: ready\ndata: {}\n\n');
}

/** `event: gap`: the channel's missed messages cannot be replayed; the application refetches. */
export function gapEvent(stream, channel) {
  return withCursor(stream, `event: gap\ndata: {"channel":"${channel}"}\n\n`);
}

/**
 * Fan-out of one message to a channel's streams. The data is encoded once;
 * the streams on this channel alone (most) share one whole event, built on
 * first use; a stream on several channels gets its own `id:` line, since its
 * cursor holds every channel's position.
 * @param {import('./subscriptions.js').LocalChannel} local with `seq` already this message's
 * @returns {number} events written
 */
export function writeEvents(local, channel, dataJson, maxBuffered) {
  const data = eventData(channel, local.seq, dataJson);
  let single;
  let written = 0;
  for (const stream of local.sse) {
    const event =
      stream.channels.length === 1
        ? (single ??= Buffer.from(`id: ${local.seq}.${local.epoch}\n${data}`))
        : withCursor(stream, data);
    if (writeFrame(stream, event, maxBuffered)) written++;
  }
  return written;
}
