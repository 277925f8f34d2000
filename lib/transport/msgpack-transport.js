// The MessagePack WebSocket (`gateway.msgpack`): a transport of its own, so
// fan-out encodes a message once per worker for all its MessagePack
// subscribers, as it does for JSON ones (./transport.js). It differs from
// the JSON WebSocket (./ws-transport.js) only in its encoding: binary frames
// decoded by ../codecs/msgpack.js, and messages encoded as MessagePack with
// binary data as bytes (../codecs/data.js).
//
// Replies (acks, errors, presence answers) are built as JSON text by
// ../protocol/frames.js, the one place frames are defined; a MessagePack
// connection re-encodes them in send(), field for field. They are few; the
// messages, the hot path, are encoded directly.
import { require } from '../runtime/require.js';
import { valueOf } from '../codecs/data.js';
import * as msgpack from '../codecs/msgpack.js';
import { GatewaySocket, wsTransport } from './ws-transport.js';
import { defineTransport } from './transport.js';

const { Sender } = require('ws');

const BINARY = { fin: true, opcode: 0x2, mask: false, readOnly: false, rsv1: false };

/** A complete unmasked binary frame. */
export function encodeBinary(bytes) {
  return Buffer.concat(Sender.frame(bytes, BINARY));
}

export class MsgpackSocket extends GatewaySocket {
  send(data, options, cb) {
    super.send(typeof data === 'string' ? msgpack.fromJson(data) : data, options, cb);
  }
}

export const msgpackTransport = defineTransport(MsgpackSocket, {
  ...wsTransport,
  name: 'ws-msgpack',
  encoding: msgpack.name,
  decode: msgpack.decode,
  encode: (channel, seq, epoch, dataJson) => encodeBinary(msgpack.encode({ type: 'message', channel, seq, data: valueOf(dataJson) })),
  encodeDelta: (channel, seq, delta) => encodeBinary(msgpack.encode({ type: 'message', channel, seq, delta: true, data: delta })),
  encodeEvent: (kind, frame) => encodeBinary(msgpack.fromJson(frame))
});
