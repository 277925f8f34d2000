// An Ably message as the gateway carries it: checked as it comes (from a
// realtime MESSAGE or a REST publish), then made the data the engine keeps
// and every worker fans out (`{id, name, data, encoding, clientId,
// connectionId, timestamp, extras}`, serialised once by the core). Bytes (a MessagePack bin)
// are kept as base64 with `base64` added to their encoding, as Ably's JSON
// format carries them, so a client of either format decodes the same data.
import { createHash } from 'node:crypto';
import { checkDepth } from '../protocol/validate.js';
import { AblyCode, AblyError } from './errors.js';

const MAX_NAME_LENGTH = 1024;
const MAX_ENCODING_LENGTH = 256;
const MAX_ID_LENGTH = 256;
const MAX_KEY_LENGTH = 64; // the engine's idempotency keys

/**
 * @param {*} message one message as a client sent it
 * @param {{clientId: string|undefined, wildcard: boolean}} who the connection's identity: its clientId, or any (`*`)
 * @param {{id: string, connectionId: string|undefined, timestamp: number}} stamp its default id, its connection, the time
 * @returns {object} the message as the engine keeps it (undefined fields left out when serialised)
 * @throws {AblyError} 40000, 40012 (a clientId not the connection's), 93002 (an update, a delete, an annotation)
 */
export function messageData(message, who, stamp) {
  if (message === null || typeof message !== 'object' || Array.isArray(message)) throw bad('a message is an object');
  const { name, encoding, clientId, id, extras, action } = message;
  if (action !== undefined && action !== 0) throw new AblyError(AblyCode.UNSUPPORTED, 'message updates, deletes and appends are not served');
  if (name !== undefined && name !== null && (typeof name !== 'string' || name.length > MAX_NAME_LENGTH)) throw bad(`name is a string of at most ${MAX_NAME_LENGTH} characters`);
  if (encoding !== undefined && encoding !== null && (typeof encoding !== 'string' || encoding.length > MAX_ENCODING_LENGTH)) throw bad('encoding is a string');
  if (id !== undefined && id !== null && (typeof id !== 'string' || id === '' || id.length > MAX_ID_LENGTH)) throw bad(`id is a string of 1 to ${MAX_ID_LENGTH} characters`);
  if (extras !== undefined && extras !== null && (typeof extras !== 'object' || Array.isArray(extras))) throw bad('extras is an object');
  let data = message.data;
  let dataEncoding = encoding ?? undefined;
  if (ArrayBuffer.isView(data)) {
    data = Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('base64');
    dataEncoding = dataEncoding ? `${dataEncoding}/base64` : 'base64';
  }
  // Nesting bounded before anything serialises it (JSON.stringify recurses).
  checkDepth(data);
  checkDepth(extras);
  return {
    id: id ?? stamp.id,
    name: name ?? undefined,
    data,
    encoding: dataEncoding,
    clientId: clientIdOf(clientId, who),
    connectionId: stamp.connectionId,
    timestamp: stamp.timestamp,
    extras: extras ?? undefined
  };
}

/** A fresh id for messages the gateway publishes itself (`kind`: rest, admin): `<kind>-<ms, base 36>-<random>`. */
export function freshMessageId(kind, timestamp) {
  return `${kind}-${timestamp.toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
}

/** The engine's idempotency key of a message id: the id, or past 64 characters its SHA-256. */
export function idempotencyKeyOf(id) {
  return id.length <= MAX_KEY_LENGTH ? id : createHash('sha256').update(id).digest('base64url');
}

/** The clientId a message carries: the connection's, or for a wildcard identity whatever it names. */
function clientIdOf(given, { clientId, wildcard }) {
  if (given === undefined || given === null) return clientId;
  if (typeof given !== 'string' || given === '') throw bad('clientId is a non-empty string');
  if (wildcard || given === clientId) return given;
  throw new AblyError(AblyCode.CLIENT_ID_MISMATCH, `this connection may publish as ${clientId === undefined ? 'no clientId' : JSON.stringify(clientId)} only`);
}

function bad(message) {
  return new AblyError(AblyCode.BAD_REQUEST, message);
}
