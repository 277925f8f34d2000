// What the keyed HTTP routes (POST /publish, /disconnect: ../native/http.js; POST
// /api/<method>: ../native/api.js) and GET /sse share: reading a bounded body,
// answering JSON, answering an error of the family (../errors.js) with the
// status it knows, checking the API key, and the last word on a defect.
import { createHash, timingSafeEqual } from 'node:crypto';
import { ErrorCode, GatewayError } from '../core/errors.js';

/**
 * The API key guards every keyed route: POST /publish, POST /disconnect and
 * POST /api/<method>. Without --api-key they are disabled.
 * @param {string|undefined} apiKey --api-key
 * @returns {(req) => void} throws the GatewayError answering a request that may not use a keyed route
 */
export function keyCheck(apiKey) {
  const keyHash = apiKey === undefined ? undefined : sha256(apiKey);
  return function checkKey(req) {
    if (keyHash === undefined) throw new GatewayError(ErrorCode.FORBIDDEN, `POST ${req.url.split('?', 1)[0]} is disabled: start the gateway with --api-key`);
    const auth = req.headers.authorization;
    if (auth === undefined || !auth.startsWith('Bearer ')) throw new GatewayError(ErrorCode.UNAUTHORIZED, 'Authorization: Bearer <api key> is required');
    if (!timingSafeEqual(sha256(auth.slice(7)), keyHash)) throw new GatewayError(ErrorCode.FORBIDDEN, 'wrong api key');
  };
}

/**
 * One percent-encoded path segment, decoded. Bad percent-encoding is the
 * client's mistake, answered bad_request: decodeURIComponent's URIError
 * would otherwise leave the request handler as an uncaught exception.
 * @throws {GatewayError} bad_request
 */
export function decodeSegment(segment) {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new GatewayError(ErrorCode.BAD_REQUEST, 'the path is not valid percent-encoded UTF-8');
  }
}

/** Reads a request body of at most `limit` bytes, as text; larger is payload_too_large. */
export function readBody(req, limit) {
  return collect(req, limit, (bytes) => bytes.toString());
}

/** The body's bytes, as readBody() reads it (a MessagePack body). */
export function readBytes(req, limit) {
  return collect(req, limit, (bytes) => bytes);
}

/** The body, made into what `finish` makes of its bytes as it ends (in the request's own event, as any input is read). */
function collect(req, limit, finish) {
  return new Promise((resolve, reject) => {
    const tooLarge = () => new GatewayError(ErrorCode.PAYLOAD_TOO_LARGE, `body is over ${limit} bytes`);
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
    req.on('end', () => resolve(finish(Buffer.concat(chunks))));
    req.on('error', reject);
  });
}

export function reply(res, status, body, headers = {}) {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/**
 * Answers a refused request with the error's status and `body` (each route
 * keeps its body's shape): a 401 says how to authenticate, a 503 when to
 * come back.
 */
export function replyError(res, err, body, headers) {
  const told = err.status === 401 ? { 'WWW-Authenticate': 'Bearer' } : err.status === 503 ? { 'Retry-After': '1' } : undefined;
  reply(res, err.status, body, { ...told, ...headers });
}

const MAX_LOGGED_PATH = 120; // a hostile path stays a short log field

/**
 * The last catch of a request's promise chain. Each route answers every
 * refusal (an error of the family) before it, so what reaches it is a
 * defect: logged with its stack, and that request's connection cut; the
 * process and every other request go on.
 * @param {import('node:http').ServerResponse} res
 * @param {import('pino').Logger} log
 * @returns {(err: unknown) => void}
 */
export function cutOnDefect(res, log) {
  return (err) => {
    const path = res.req.url.split('?', 1)[0].slice(0, MAX_LOGGED_PATH);
    log.error({ err, method: res.req.method, path }, 'defect while answering a request: its connection is cut');
    res.destroy();
  };
}

function sha256(text) {
  return createHash('sha256').update(text).digest();
}
