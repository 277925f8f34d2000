// Text that must be one JSON object: a native client's frame, a Pusher
// client's frame, the body of a keyed POST route, the server API and the
// admin page's actions. Parsed and refused the same way wherever it comes
// in; what the object holds is the caller's to check (the server API's
// methods, ../core/server.js, check their params whole).
import { ErrorCode, GatewayError } from '../core/errors.js';

/**
 * Parses `text` as one JSON object.
 * @param {string} what named in the error: 'frame', 'body'
 * @throws {GatewayError} bad_request
 */
export function parseObject(text, what) {
  let value;
  try {
    value = JSON.parse(text);
  } catch {
    throw new GatewayError(ErrorCode.BAD_REQUEST, `${what} is not valid JSON`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new GatewayError(ErrorCode.BAD_REQUEST, `${what} must be a JSON object`);
  }
  return value;
}
