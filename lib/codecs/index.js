// The encodings a WebSocket may speak, chosen at the upgrade by
// Sec-WebSocket-Protocol: the first the client offers that the gateway
// knows. No header means JSON; a header that offers none of them is
// refused (400) before the handshake, so a client never talks past the
// gateway in an encoding it did not ask for.
import { ErrorCode, GatewayError } from '../core/errors.js';
import * as json from './json.js';
import * as msgpack from './msgpack.js';

/** protocol name -> encoding */
export const ENCODINGS = new Map([
  [json.protocol, json.name],
  [msgpack.protocol, msgpack.name]
]);

/**
 * @param {string|undefined} header the request's Sec-WebSocket-Protocol
 * @returns {'json'|'msgpack'} the connection's encoding
 * @throws {GatewayError} bad_request when only unknown protocols are offered
 */
export function negotiate(header) {
  if (header === undefined) return json.name;
  for (const offered of header.split(',')) {
    const encoding = ENCODINGS.get(offered.trim());
    if (encoding !== undefined) return encoding;
  }
  throw new GatewayError(
    ErrorCode.BAD_REQUEST,
    `Sec-WebSocket-Protocol offers none of ${[...ENCODINGS.keys()].join(', ')} (${JSON.stringify(header.slice(0, 100))})`
  );
}

/** @returns {string} the protocol the handshake answers for an encoding */
export function protocolOf(encoding) {
  return encoding === msgpack.name ? msgpack.protocol : json.protocol;
}
