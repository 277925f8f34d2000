// POST /api/<method>: the server API, for the application's backend. Every
// call carries the --api-key as a bearer token and a JSON object body (at
// most --max-payload bytes); a success answers 200 {"result": …}, a failure
// {"error": {"code", "message"}} with the status its code calls for. The
// methods are in ./api-methods.js; POST /publish and /disconnect stay as
// they were (./http.js).
import { ErrorCode, ProtocolError } from '../protocol.js';
import { Namespaces } from '../namespaces.js';
import { METHODS, runMethod } from './api-methods.js';
import { keyCheck, readBody, reply } from './http-io.js';
import { metrics } from './metrics.js';

const OK = 'ok';

export class ServerApi {
  /**
   * @param {object} options
   * @param {object} options.config resolved gateway configuration
   * @param {import('./relay.js').WorkerRelay} options.relay
   * @param {import('./users.js').WorkerUsers} [options.users] under --auth jwt or hook
   * @param {import('./presence.js').WorkerPresence} options.presence
   */
  constructor({ config, relay, users, presence }) {
    this.context = { relay, users, presence, namespaces: new Namespaces(config) };
    this.keyProblem = keyCheck(config.apiKey);
    this.maxPayload = config.maxPayload;
  }

  request(req, res, method) {
    const label = Object.hasOwn(METHODS, method) ? method : 'unknown';
    const fail = (status, code, message, headers) => {
      metrics.apiRequests.inc({ method: label, code });
      reply(res, status, { error: { code, message } }, headers);
    };
    if (req.method !== 'POST') return fail(405, ErrorCode.BAD_REQUEST, 'the server API takes POST', { Allow: 'POST' });
    const problem = this.keyProblem(req);
    if (problem !== undefined) return fail(problem[0], ErrorCode.FORBIDDEN, problem[1], problem[2]);
    if (label === 'unknown') {
      req.resume();
      return fail(404, ErrorCode.NOT_FOUND, `no method ${JSON.stringify(method.slice(0, 64))}: see the README's server API table`);
    }
    readBody(req, this.maxPayload)
      .then((text) => runMethod(method, parseParams(text), this.context))
      .then(
        (result) => {
          metrics.apiRequests.inc({ method, code: OK });
          reply(res, 200, { result });
        },
        (err) => {
          if (!(err instanceof ProtocolError)) throw err;
          fail(statusOf(err), err.code, err.message, err.code === ErrorCode.UNAVAILABLE || err.code === ErrorCode.RATE_LIMITED ? { 'Retry-After': '1' } : undefined);
        }
      )
      .catch(() => res.destroy());
  }
}

/** The HTTP status of a refused call. */
export function statusOf(err) {
  return STATUS[err.code] ?? 400;
}

const STATUS = {
  [ErrorCode.FORBIDDEN]: 403,
  [ErrorCode.NOT_FOUND]: 404,
  [ErrorCode.PAYLOAD_TOO_LARGE]: 413,
  [ErrorCode.UNAVAILABLE]: 503,
  [ErrorCode.RATE_LIMITED]: 503
};

function parseParams(text) {
  let params;
  try {
    params = JSON.parse(text);
  } catch {
    throw new ProtocolError(ErrorCode.BAD_REQUEST, 'body is not valid JSON');
  }
  if (params === null || typeof params !== 'object' || Array.isArray(params)) throw new ProtocolError(ErrorCode.BAD_REQUEST, 'body must be a JSON object');
  return params;
}
