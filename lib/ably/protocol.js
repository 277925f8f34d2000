// Ably's ProtocolMessages on the wire: their actions and flags, and the two
// formats a connection may choose (`format=json`: text frames; `msgpack`:
// binary frames of plain maps, no extension types). Decoding is bounded as
// the native MessagePack decoder's is: no frame holds more than --max-payload.
import { Decoder, Encoder } from '@msgpack/msgpack';
import { AblyCode, AblyError } from './errors.js';

export const Action = Object.freeze({
  HEARTBEAT: 0,
  ACK: 1,
  NACK: 2,
  CONNECTED: 4,
  DISCONNECT: 5,
  DISCONNECTED: 6,
  CLOSE: 7,
  CLOSED: 8,
  ERROR: 9,
  ATTACH: 10,
  ATTACHED: 11,
  DETACH: 12,
  DETACHED: 13,
  PRESENCE: 14,
  MESSAGE: 15,
  SYNC: 16,
  AUTH: 17
});

export const Flag = Object.freeze({
  RESUMED: 1 << 2,
  PRESENCE: 1 << 16,
  PUBLISH: 1 << 17,
  SUBSCRIBE: 1 << 18,
  PRESENCE_SUBSCRIBE: 1 << 19
});

export const Format = Object.freeze({ JSON: 'json', MSGPACK: 'msgpack' });

const NO_EXTENSIONS = {
  encode: () => null,
  decode: () => {
    throw new AblyError(AblyCode.BAD_REQUEST, 'MessagePack extension types are not accepted');
  }
};
const MAX_LENGTH = 1 << 30;
const encoder = new Encoder({ ignoreUndefined: true });
const decoder = new Decoder({ extensionCodec: NO_EXTENSIONS, maxStrLength: MAX_LENGTH, maxBinLength: MAX_LENGTH, maxArrayLength: MAX_LENGTH, maxMapLength: MAX_LENGTH, maxExtLength: MAX_LENGTH });

/**
 * A channelSerial the client kept (`<epoch>:<seq>`, as ATTACHED and each
 * MESSAGE tell it): where its channel stands for it.
 * @returns {{epoch: string, seq: number}|undefined} undefined for anything else
 */
export function sinceOf(channelSerial) {
  if (typeof channelSerial !== 'string') return undefined;
  const colon = channelSerial.lastIndexOf(':');
  const seq = Number(channelSerial.slice(colon + 1));
  if (colon < 1 || colon === channelSerial.length - 1 || !Number.isSafeInteger(seq) || seq < 0) return undefined;
  return { epoch: channelSerial.slice(0, colon), seq };
}

/** A ProtocolMessage as the connection's format writes it: JSON text, or MessagePack bytes. */
export function encodeMessage(format, message) {
  return format === Format.MSGPACK ? encoder.encode(message) : JSON.stringify(message);
}

/** JSON text of a ProtocolMessage (the fan-out's), as MessagePack. */
export function msgpackOfJson(text) {
  return encoder.encode(JSON.parse(text));
}

/**
 * @param {Buffer} data one WebSocket frame's payload
 * @param {boolean} isBinary
 * @returns {object} the ProtocolMessage, an object with a numeric action
 * @throws {AblyError} 40000
 */
export function decodeMessage(format, data, isBinary) {
  let message;
  try {
    message = format === Format.MSGPACK && isBinary ? decoder.decode(data) : JSON.parse(data.toString());
  } catch (err) {
    if (err instanceof AblyError) throw err;
    throw new AblyError(AblyCode.BAD_REQUEST, `not a ProtocolMessage in ${format}`);
  }
  if (message === null || typeof message !== 'object' || Array.isArray(message) || !Number.isInteger(message.action)) {
    throw new AblyError(AblyCode.BAD_REQUEST, 'a ProtocolMessage is an object with a numeric action');
  }
  return message;
}
