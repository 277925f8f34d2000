// The WebSocket transport (./transport.js). Server-to-client frames are
// encoded once and written as the same bytes to many sockets: `ws.send`
// would frame the payload again for every subscriber; here a message is
// framed once per worker whatever its fan-out. Writing to the socket
// directly is safe because the gateway never compresses (ws queues only
// while deflating), and ws's bufferedAmount still counts these bytes.
import { require } from '../runtime/require.js';
import { deltaFrame, messageFrame } from '../protocol/frames.js';
import { socketOf } from '../runtime/internals.js';
import * as json from '../codecs/json.js';
import { countSent, defineTransport, writeBytes } from './transport.js';
import { kSession } from '../core/symbols.js';

const { Sender, WebSocket } = require('ws');

const TEXT = { fin: true, opcode: 0x1, mask: false, readOnly: false, rsv1: false };
const PING = { fin: true, opcode: 0x9, mask: false, readOnly: false, rsv1: false };

/** A complete unmasked text frame. */
export function encodeText(text) {
  return Buffer.concat(Sender.frame(Buffer.from(text), TEXT));
}

/**
 * The class ws makes the gateway's connections of (WebSocketServer's
 * `WebSocket` option): ws's own, with the transport on its prototype, its
 * sends (answers, acks) coalesced with the fan-out's writes of the turn.
 */
export class GatewaySocket extends WebSocket {
  constructor(address, protocols, options) {
    super(address, protocols, options);
    // Its session (lib/core/session.js), from its way in's begin(): a field
    // from the start, so it sits inside the object rather than in a
    // properties array of its own.
    this[kSession] = undefined;
  }

  /** Every reply (../protocol/frames.js) leaves here: counted in gateway_bytes_sent_total, and coalesced with the fan-out's writes of the turn. */
  send(data, options, cb) {
    countSent(this, data);
    // A socket refused at the door has no session, and nothing to wait for.
    if (this.readyState === WebSocket.OPEN) this[kSession]?.way.coalescer.hold(socketOf(this));
    super.send(data, options, cb);
  }
}

function write(ws, bytes, maxBuffered) {
  return ws.readyState === WebSocket.OPEN && writeBytes(ws, socketOf(ws), bytes, maxBuffered);
}

export const wsTransport = defineTransport(GatewaySocket, {
  name: 'ws',
  encoding: json.name,
  decode: json.decode,
  answersPings: true,
  channelsFixed: false,
  ping: Buffer.concat(Sender.frame(Buffer.alloc(0), PING)),
  encode: (channel, seq, epoch, dataJson) => encodeText(messageFrame(channel, seq, dataJson)),
  encodeDelta: (channel, seq, delta) => encodeText(deltaFrame(channel, seq, delta)),
  writeMessage: write,
  encodeEvent: (kind, frame) => encodeText(frame),
  write,
  buffered: (ws) => ws.bufferedAmount,
  isOpen: (ws) => ws.readyState === WebSocket.OPEN,
  isClosed: (ws) => ws.readyState === WebSocket.CLOSED,
  close: (ws, code, reason) => ws.close(code, reason),
  terminate: (ws) => ws.terminate()
});
