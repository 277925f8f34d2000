// The Pusher WebSocket as a transport (lib/transport/transport.js): a
// WebSocket like the native one in everything but the bytes of a message
// and the close codes. A message is encoded once per worker as Pusher's
// event frame; a message that names a socket_id to leave out (a client
// event's sender) skips that one connection (its session's id), so nothing is echoed.
import { CloseCode } from '../errors.js';
import { defineTransport } from '../transport/transport.js';
import { kSession } from '../core/symbols.js';
import { encodeText, GatewaySocket, wsTransport } from '../transport/ws-transport.js';
import { errorFrame, eventFrame, PusherCode, TERMINATE } from './frames.js';
import { clientName } from './channels.js';

/**
 * The class ws makes Pusher connections of (their WebSocketServer's
 * `WebSocket` option): the native one's, its sends coalesced the same way,
 * with this transport on its prototype.
 */
export class PusherSocket extends GatewaySocket {}

// The gateway's close codes as Pusher's: its clients reconnect by the code's range.
const CLOSE_CODES = new Map([
  [CloseCode.GOING_AWAY, PusherCode.RECONNECT], // a drain: reconnect at once
  [CloseCode.TRY_AGAIN, PusherCode.OVER_CAPACITY] // a slow consumer: back off first
]);

const TERMINATED = Object.freeze({ terminate: true });
const TERMINATED_FRAME = errorFrame(PusherCode.UNAUTHORIZED, 'connection terminated by the server');

defineTransport(PusherSocket, {
  ...wsTransport,
  encode(channel, seq, epoch, dataJson) {
    if (dataJson === TERMINATE) return TERMINATED;
    const { text, exclude } = eventFrame(clientName(channel), dataJson);
    return { bytes: encodeText(text), exclude };
  },
  writeMessage(ws, message, maxBuffered) {
    if (message === TERMINATED) return void terminated(ws);
    return message.exclude !== ws[kSession].id && wsTransport.write(ws, message.bytes, maxBuffered);
  },
  // No join/leave frames: Pusher's members arrive as events (./members.js).
  close: (ws, code, reason) => ws.close(CLOSE_CODES.get(code) ?? code, reason),
  // Publishes are answered with Pusher's frames, never the native ack.
  acksPublishes: false,
  // Its connections belong to apps: what they are sent is counted by app (lib/session/metrics.js).
  hasApps: true
});

/** terminate_connections reached one of the user's connections. */
function terminated(ws) {
  if (!wsTransport.isOpen(ws)) return;
  ws.send(TERMINATED_FRAME);
  ws.close(PusherCode.UNAUTHORIZED, 'terminated by the server');
}
