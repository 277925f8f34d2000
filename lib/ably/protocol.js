// Ably's ProtocolMessages on the wire: their actions and flags, and the two
// formats a connection may choose (`format=json`: text frames; `msgpack`:
// binary frames of plain maps, no extension types), through the gateway's
// MessagePack codec (bounded decoding, no extension types).
import { decodeValue, encode } from '../codecs/msgpack.js';
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
  HAS_PRESENCE: 1 << 0,
  HAS_BACKLOG: 1 << 1,
  RESUMED: 1 << 2,
  PRESENCE: 1 << 16,
  PUBLISH: 1 << 17,
  SUBSCRIBE: 1 << 18,
  PRESENCE_SUBSCRIBE: 1 << 19
});

export const Format = Object.freeze({ JSON: 'json', MSGPACK: 'msgpack' });

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
  return format === Format.MSGPACK ? encode(message) : JSON.stringify(message);
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
    message = format === Format.MSGPACK && isBinary ? decodeValue(data) : JSON.parse(data.toString());
  } catch {
    throw new AblyError(AblyCode.BAD_REQUEST, `not a ProtocolMessage in ${format}`);
  }
  if (message === null || typeof message !== 'object' || Array.isArray(message) || !Number.isInteger(message.action)) {
    throw new AblyError(AblyCode.BAD_REQUEST, 'a ProtocolMessage is an object with a numeric action');
  }
  return message;
}
