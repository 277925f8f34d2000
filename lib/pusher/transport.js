// The Pusher WebSocket as a transport (lib/transport/transport.js): a
// WebSocket like the native one in everything but the bytes of a message
// and the close codes. A message is encoded once per worker as Pusher's
// event frame; a client event's sender is left out by the fan-out (the
// publication's `exclude`), so nothing is echoed.
import { CloseCode } from '../core/errors.js';
import { defineTransport } from '../transport/transport.js';
import { encodeText, GatewaySocket, wsTransport } from '../transport/ws-transport.js';
import { errorFrame, eventFrame, PusherCode } from './frames.js';
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

defineTransport(PusherSocket, {
  ...wsTransport,
  encode: (channel, seq, epoch, dataJson) => encodeText(eventFrame(clientName(channel), dataJson)),
  // No join/leave frames: Pusher's members arrive as events (./members.js).
  close(ws, code, reason) {
    const pusherCode = CLOSE_CODES.get(code) ?? code;
    // Ended as unauthorized (terminate_connections): Pusher's clients are told why in a pusher:error first.
    if (pusherCode === PusherCode.UNAUTHORIZED) closeWithError(ws, pusherCode, reason);
    else ws.close(pusherCode, reason);
  },
  // Its connections belong to apps: what they are sent is counted by app (lib/session/metrics.js).
  hasApps: true
});

/** Ends an open Pusher connection for a reason, as Pusher's clients expect: pusher:error with the code, then the close with it. */
export function closeWithError(ws, code, message) {
  if (!wsTransport.isOpen(ws)) return;
  ws.send(errorFrame(code, message));
  ws.close(code, message);
}
