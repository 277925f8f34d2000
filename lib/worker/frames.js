// Server-to-client frames encoded once and written as the same bytes to many
// sockets. `ws.send` would frame the payload again for every subscriber; here a
// publish is framed once per worker whatever its fan-out. Writing to the
// socket directly is safe because the gateway never compresses (ws queues only
// while deflating), and ws's bufferedAmount still counts these bytes.
import { require } from '../require.js';
import { CloseCode } from '../protocol.js';
import { metrics } from './metrics.js';

const { Sender, WebSocket } = require('ws');

const TEXT = { fin: true, opcode: 0x1, mask: false, readOnly: false, rsv1: false };
const PING = { fin: true, opcode: 0x9, mask: false, readOnly: false, rsv1: false };

/** A complete unmasked text frame. */
export function encodeText(text) {
  return Buffer.concat(Sender.frame(Buffer.from(text), TEXT));
}

/** An empty ping frame, shared by every keepalive ping. */
export const PING_FRAME = Buffer.concat(Sender.frame(Buffer.alloc(0), PING));

/**
 * Writes an encoded frame to one client. A client that has more than
 * `maxBuffered` bytes waiting is a slow consumer: it is closed with 1013 so
 * its backlog stops growing, and the others are not held back.
 * @returns {boolean} whether the frame was written
 */
export function writeFrame(ws, frame, maxBuffered) {
  if (ws.readyState !== WebSocket.OPEN) return false;
  const socket = ws._socket;
  socket.write(frame);
  if (socket.writableLength > maxBuffered) {
    metrics.dropped.inc({ reason: 'slow_consumer' });
    ws.close(CloseCode.TRY_AGAIN, 'slow consumer');
  }
  return true;
}
