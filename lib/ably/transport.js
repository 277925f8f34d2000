// The Ably WebSocket as a transport (lib/transport/transport.js), one per
// format: a message is encoded once per worker per format as Ably's MESSAGE
// ProtocolMessage, its channelSerial the channel's `<epoch>:<seq>` (a
// presence event as a PRESENCE one: ./presence.js). A
// connection the gateway ends (a drain, a slow consumer) is told
// DISCONNECTED first: ably-js reads no close code, and reconnects on that.
import { encode, fromJson } from '../codecs/msgpack.js';
import { defineTransport } from '../transport/transport.js';
import { encodeText, GatewaySocket, wsTransport } from '../transport/ws-transport.js';
import { encodeBinary } from '../transport/msgpack-transport.js';
import { ablyName } from './channels.js';
import { isPresenceEvent } from './presence.js';
import { Action, encodeMessage, Format } from './protocol.js';

/** The class ws makes Ably connections of, one per format, with its transport on its prototype. */
export class AblySocket extends GatewaySocket {}
export class AblyMsgpackSocket extends GatewaySocket {}
/** A connection that asked for protocol heartbeats (`heartbeats=true`: a browser, which sees no WebSocket pings), of each format. */
export class AblyHeartbeatSocket extends GatewaySocket {}
export class AblyMsgpackHeartbeatSocket extends GatewaySocket {}

/**
 * A message's MESSAGE ProtocolMessage, as JSON text built around the data
 * the engine keeps; a presence event's, a PRESENCE one, without a
 * channelSerial (ably-js keeps a channel's serial from its messages).
 */
function messageJson(channel, seq, epoch, dataJson) {
  const name = JSON.stringify(ablyName(channel));
  if (isPresenceEvent(dataJson)) return `{"action":${Action.PRESENCE},"channel":${name},"presence":[${dataJson}]}`;
  return `{"action":${Action.MESSAGE},"channel":${name},"channelSerial":"${epoch}:${seq}","messages":[${dataJson}]}`;
}

/** Closes after DISCONNECTED, so the client resumes elsewhere (a drain) or after a pause. */
function closeWith(format) {
  return (ws, code, reason) => {
    if (ws.readyState === ws.OPEN) ws.send(encodeMessage(format, { action: Action.DISCONNECTED }));
    ws.close(code, reason);
  };
}

export const ablyJsonTransport = defineTransport(AblySocket, {
  ...wsTransport,
  encode: (channel, seq, epoch, dataJson) => encodeText(messageJson(channel, seq, epoch, dataJson)),
  close: closeWith(Format.JSON)
});

// A browser's ably-js drops a transport that sends nothing for maxIdleInterval (the ping interval) and 10 s more:
// its keepalive ping carries a HEARTBEAT with it, one write for both frames.
export const ablyHeartbeatTransport = defineTransport(AblyHeartbeatSocket, {
  ...ablyJsonTransport,
  ping: Buffer.concat([wsTransport.ping, encodeText(`{"action":${Action.HEARTBEAT}}`)])
});

export const ablyMsgpackTransport = defineTransport(AblyMsgpackSocket, {
  ...wsTransport,
  name: 'ws-msgpack',
  encoding: Format.MSGPACK,
  encode: (channel, seq, epoch, dataJson) => encodeBinary(fromJson(messageJson(channel, seq, epoch, dataJson))),
  close: closeWith(Format.MSGPACK)
});

export const ablyMsgpackHeartbeatTransport = defineTransport(AblyMsgpackHeartbeatSocket, {
  ...ablyMsgpackTransport,
  ping: Buffer.concat([wsTransport.ping, encodeBinary(encode({ action: Action.HEARTBEAT }))])
});
