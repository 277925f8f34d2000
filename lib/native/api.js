// POST /api/<method>: the server API, for the application's backend. Every
// call carries the --api-key as a bearer token and a JSON object body (at
// most --max-payload bytes); a success answers 200 {"result": …}, a failure
// {"error": {"code", "message"}} with the status its error knows. The
// methods are the command core's (../core/server.js).
import { ErrorCode, GatewayError } from '../core/errors.js';
import { METHODS, runMethod } from '../core/server.js';
import { parseObject } from '../protocol/json-object.js';
import { cutOnDefect, keyCheck, readBody, reply, replyError } from '../transport/http-io.js';
import { defaultsOf } from '../config/options.js';
import { metrics, NATIVE_APP } from '../session/metrics.js';

const OK = 'ok';

// The options that default to their flags' (lib/config/options.js).
const DEFAULTS = defaultsOf('api-key', 'max-payload');

export class ServerApi {
  /**
   * @param {object} options
   * @param {string} [options.apiKey] --api-key: the bearer token every call carries; none: the API is off (403)
   * @param {number} [options.maxPayload] --max-payload: the most bytes of a body
   * @param {import('../core/server.js').ServerContext} options.context what the methods run against
   * @param {import('pino').Logger} options.log where a defect is told
   */
  constructor(options) {
    const { apiKey, maxPayload, context, log } = { ...DEFAULTS, ...options };
    this.context = context;
    this.log = log;
    this.checkKey = keyCheck(apiKey);
    this.maxPayload = maxPayload;
  }

  request(req, res, method) {
    const label = Object.hasOwn(METHODS, method) ? method : 'unknown';
    const fail = (err) => {
      if (!(err instanceof GatewayError)) throw err;
      metrics.apiRequests.inc({ method: label, code: err.code, app: NATIVE_APP });
      replyError(res, err, { error: { code: err.code, message: err.message } }, err.status === 405 ? { Allow: 'POST' } : undefined);
    };
    try {
      if (req.method !== 'POST') throw new GatewayError(ErrorCode.METHOD_NOT_ALLOWED, 'the server API takes POST');
      this.checkKey(req);
      if (label === 'unknown') throw new GatewayError(ErrorCode.NOT_FOUND, `no method ${JSON.stringify(method.slice(0, 64))}: see the README's server API table`);
    } catch (err) {
      req.resume();
      return fail(err);
    }
    readBody(req, this.maxPayload)
      .then((text) => runMethod(method, parseObject(text, 'body'), this.context))
      .then((result) => {
        metrics.apiRequests.inc({ method, code: OK, app: NATIVE_APP });
        reply(res, 200, { result });
      }, fail)
      .catch(cutOnDefect(res, this.log));
  }
}
