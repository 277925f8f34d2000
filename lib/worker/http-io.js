// What the keyed HTTP routes (POST /publish, /disconnect: ./http.js; POST
// /api/<method>: ./api.js) and GET /sse share: reading a bounded body,
// answering JSON, and checking the API key.
import { createHash, timingSafeEqual } from 'node:crypto';
import { ErrorCode, ProtocolError } from '../protocol.js';

/**
 * @param {string|undefined} apiKey --api-key
 * @returns {(req) => [number, string, object?]|undefined} why a request may not use a keyed route
 *   (status, message, headers), or undefined when it carries the key
 */
export function keyCheck(apiKey) {
  const keyHash = apiKey === undefined ? undefined : sha256(apiKey);
  return function keyProblem(req) {
    if (keyHash === undefined) return [403, `POST ${req.url.split('?', 1)[0]} is disabled: start the gateway with --api-key`];
    const auth = req.headers.authorization;
    if (auth === undefined || !auth.startsWith('Bearer ')) return [401, 'Authorization: Bearer <api key> is required', { 'WWW-Authenticate': 'Bearer' }];
    if (!timingSafeEqual(sha256(auth.slice(7)), keyHash)) return [403, 'wrong api key'];
    return undefined;
  };
}

/** Reads a request body of at most `limit` bytes; larger is payload_too_large. */
export function readBody(req, limit) {
  return new Promise((resolve, reject) => {
    const tooLarge = () => new ProtocolError(ErrorCode.PAYLOAD_TOO_LARGE, `body is over ${limit} bytes`);
    if (Number(req.headers['content-length']) > limit) {
      req.resume();
      return reject(tooLarge());
    }
    const chunks = [];
    let size = 0;
    req.on('data', (chunk) => {
      size += chunk.length;
      if (size > limit) {
        req.removeAllListeners('data');
        req.resume();
        reject(tooLarge());
      } else chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString()));
    req.on('error', reject);
  });
}

/** A request body that must be a JSON object (the server API's params, the admin page's actions). */
export function parseJsonObject(text) {
  let value;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ProtocolError(ErrorCode.BAD_REQUEST, 'body is not valid JSON');
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new ProtocolError(ErrorCode.BAD_REQUEST, 'body must be a JSON object');
  return value;
}

export function reply(res, status, body, headers = {}) {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

function sha256(text) {
  return createHash('sha256').update(text).digest();
}
