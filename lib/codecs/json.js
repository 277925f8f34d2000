// The JSON encoding (`gateway.json`, and a WebSocket that names none): text
// frames both ways. The server's frames are built as this text by
// ../protocol/frames.js.
import { ErrorCode, GatewayError } from '../core/errors.js';
import { parseClientFrame } from '../protocol/client-frame.js';

export const name = 'json';
export const protocol = 'gateway.json';

/**
 * @param {Buffer} data one WebSocket frame's payload
 * @param {boolean} isBinary
 * @returns {object} the command (parseClientFrame's shape)
 * @throws {GatewayError} bad_request
 */
export function decode(data, isBinary) {
  if (isBinary) throw new GatewayError(ErrorCode.BAD_REQUEST, 'a binary frame on a gateway.json connection: send JSON text (or connect with gateway.msgpack)');
  return parseClientFrame(data.toString());
}
