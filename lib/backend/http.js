// The one HTTP client for everything the gateway sends to the application's
// backend (the hooks: ../session/hooks.js; the webhooks: ../webhooks/send.js): undici's Agent, so
// the connections to the backend are pooled and kept alive across requests,
// and at most `connections` of them are opened per origin however many
// requests wait (a reconnect storm must not open a socket per client).
//
// It posts a body and reads a bounded answer; what the answer means is the
// caller's. The failures it tells apart carry stable codes (BackendError):
// the request's own timer (started when the request is handed to undici: a
// caller queueing in front of it does not spend it), a body over the cap
// (stopped as soon as it is over, never buffered whole: a 10 MB answer costs
// the cap), a redirect (never followed: the backend is one URL the operator
// chose), an unreachable backend (refused, reset, DNS, TLS).
import { require } from '../runtime/require.js';
import { BackendError, InternalCode } from '../core/errors.js';

export { BackendError };


const DEFAULT_MAX_BYTES = 64 * 1024;
const KEEP_ALIVE_MS = 30000;

export class BackendClient {
  /**
   * @param {object} options
   * @param {number} options.timeoutMs per request, from when it is handed to undici until its body is read
   * @param {number} options.connections at most this many sockets per origin (pooled, kept alive)
   * @param {number} [options.maxBytes=65536] largest answer body read; more is InternalCode.TOO_LARGE
   * @param {number} [options.maxOrigins] at most this many origins at once: a request to one more fails (InternalCode.UNREACHABLE)
   */
  constructor({ timeoutMs, connections, maxBytes = DEFAULT_MAX_BYTES, maxOrigins = Infinity }) {
    // Loaded here, only in a worker that talks to a backend.
    const { Agent } = require('undici');
    this.timeoutMs = timeoutMs;
    this.maxBytes = maxBytes;
    this.agent = new Agent({ connections, maxOrigins, pipelining: 1, keepAliveTimeout: KEEP_ALIVE_MS, headersTimeout: 0, bodyTimeout: 0 });
  }

  /**
   * POSTs `body` to `url`.
   * @param {URL} url
   * @param {string|Buffer} body sent as it is (a caller that signs it signs these bytes)
   * @param {Object<string, string>} [headers] added to Content-Type: application/json
   * @returns {Promise<{status: number, text: string}|BackendError>} any final status but 3xx, with its
   *   body as text; never rejects
   */
  async post(url, body, headers) {
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, this.timeoutMs);
    try {
      const res = await this.agent.request({
        origin: url.origin,
        path: url.pathname + url.search,
        method: 'POST',
        headers: headers === undefined ? JSON_HEADERS : { ...JSON_HEADERS, ...headers },
        body,
        signal: controller.signal
      });
      if (res.statusCode >= 300 && res.statusCode < 400) {
        drop(res.body);
        return new BackendError(InternalCode.REDIRECT, `answered ${res.statusCode} (redirects are not followed)`);
      }
      const text = await readCapped(res, this.maxBytes);
      return text instanceof BackendError ? text : { status: res.statusCode, text };
    } catch (err) {
      if (timedOut) return new BackendError(InternalCode.TIMEOUT, `no answer within ${this.timeoutMs} ms`);
      return new BackendError(InternalCode.UNREACHABLE, `${err.code ?? err.name}: ${err.message}`);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Closes the pooled connections. */
  close() {
    return this.agent.close();
  }
}

const JSON_HEADERS = Object.freeze({ 'content-type': 'application/json' });

// The body as text, read until `max` bytes: a declared or actual length over
// it stops the read there and drops the connection.
async function readCapped(res, max) {
  const tooLarge = () => new BackendError(InternalCode.TOO_LARGE, `answer body over ${max} bytes`);
  if (Number(res.headers['content-length']) > max) {
    drop(res.body);
    return tooLarge();
  }
  const chunks = [];
  let size = 0;
  for await (const chunk of res.body) {
    size += chunk.length;
    if (size > max) {
      drop(res.body);
      return tooLarge();
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size).toString('utf8');
}

// Stops reading a body we will not use; its connection is closed, and the
// abort error undici emits for it is expected, not a fault.
function drop(body) {
  body.on('error', ignore);
  body.destroy();
}

function ignore() {}
