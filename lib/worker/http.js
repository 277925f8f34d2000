// Plain HTTP on the public port: health, the keyed POST routes (publish,
// disconnect; the server API, POST /api/<method>, is ./api.js), the browser
// client, and the entry of GET /sse (./sse.js). Upgrades are handled in
// ./upgrade.js.
import { readFileSync } from 'node:fs';
import { ErrorCode, ProtocolError, parseDisconnectBody, parsePublishBody } from '../protocol.js';
import { UNAVAILABLE_MESSAGE } from './relay.js';
import { carriedBy } from './transport.js';
import { keyCheck, readBody, reply } from './http-io.js';

const STATIC = {
  '/client.js': ['client/index.js', 'text/javascript; charset=utf-8'],
  '/protocol.js': ['protocol.js', 'text/javascript; charset=utf-8']
};

const CLIENT_PART = /^\/client\/([a-z-]+\.js)$/;

const STATUS_FOR = {
  [ErrorCode.BAD_REQUEST]: 400,
  [ErrorCode.INVALID_CHANNEL]: 400,
  [ErrorCode.PAYLOAD_TOO_LARGE]: 413,
  [ErrorCode.UNAVAILABLE]: 503
};

/**
 * @param {object} options
 * @param {object} options.config resolved gateway configuration
 * @param {import('./relay.js').WorkerRelay} options.relay
 * @param {import('./users.js').WorkerUsers} [options.users] under --auth jwt or hook
 * @param {import('./sse.js').SseStreams} options.streams GET /sse
 * @param {import('./api.js').ServerApi} options.api POST /api/<method>
 * @param {() => boolean} options.draining
 * @returns {(req, res) => void} the request listener
 */
export function createRequestHandler({ config, relay, users, streams, api, draining }) {
  const keyProblem = keyCheck(config.apiKey);
  const files = new Map();

  return function handleRequest(req, res) {
    // A request pipelined behind a connection that took its socket over (a stream): it owns the socket.
    if (carriedBy(req.socket) !== undefined) return req.socket.destroy();
    const path = req.url.split('?', 1)[0];
    if (draining()) res.setHeader('Connection', 'close');
    if (path === '/sse') return streams.request(req, res);
    if (path.startsWith('/api/')) return api.request(req, res, path.slice(5));
    if (path === '/publish' || path === '/disconnect') {
      if (req.method !== 'POST') return reply(res, 405, { error: 'method_not_allowed' }, { Allow: 'POST' });
      if (!keyAccepted(req, res)) return;
      return path === '/publish' ? publish(req, res) : disconnect(req, res);
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') return reply(res, 404, { error: 'not_found' });
    if (path === '/health') {
      if (draining()) return reply(res, 503, { status: 'draining' });
      // 200 all the same: every node loses Redis at once, and a load balancer
      // that took them all out would drop every held connection.
      return reply(res, 200, { status: relay.unavailable ? 'degraded' : 'ok' });
    }
    if (Object.hasOwn(STATIC, path)) return serveFile(res, ...STATIC[path]);
    // The client's own modules, imported by /client.js as ./client/<name>.js.
    const part = CLIENT_PART.exec(path);
    if (part !== null) return serveFile(res, `client/${part[1]}`, STATIC['/client.js'][1]);
    reply(res, 404, { error: 'not_found' });
  };

  /** Whether the request carries the API key; answers 401/403 if not. */
  function keyAccepted(req, res) {
    const problem = keyProblem(req);
    if (problem === undefined) return true;
    const [status, message, headers] = problem;
    reply(res, status, { error: ErrorCode.FORBIDDEN, message }, headers);
    return false;
  }

  function publish(req, res) {
    if (relay.busy) {
      const body = { error: ErrorCode.RATE_LIMITED, message: 'the gateway is busy relaying: retry shortly' };
      return reply(res, 503, body, { 'Retry-After': '1' });
    }
    if (relay.unavailable) {
      return reply(res, 503, { error: ErrorCode.UNAVAILABLE, message: UNAVAILABLE_MESSAGE }, { 'Retry-After': '1' });
    }
    const seq = readBody(req, config.maxPayload).then((text) => {
      const { channel, data } = parsePublishBody(text);
      return relay.publishForSeq(channel, JSON.stringify(data));
    });
    answer(res, seq, (value) => reply(res, 202, { seq: value.seq }));
  }

  function disconnect(req, res) {
    if (users === undefined) {
      return reply(res, 400, { error: ErrorCode.BAD_REQUEST, message: 'there are no users to disconnect under --auth none' });
    }
    answer(
      res,
      readBody(req, config.maxPayload).then((text) => users.disconnect(parseDisconnectBody(text))),
      (disconnected) => reply(res, 200, { disconnected })
    );
  }

  function serveFile(res, file, type) {
    let body = files.get(file);
    if (body === undefined) {
      try {
        body = readFileSync(new URL(`../${file}`, import.meta.url));
      } catch {
        return reply(res, 404, { error: 'not_found' });
      }
      files.set(file, body);
    }
    res.writeHead(200, {
      'Content-Type': type,
      'Content-Length': body.length,
      'Access-Control-Allow-Origin': '*',
      'Cache-Control': 'no-cache'
    });
    res.end(body);
  }
}

/** Replies with `ok(value)` once `promise` settles, or with the ProtocolError it failed with. */
function answer(res, promise, ok) {
  promise
    .then(ok, (err) => {
      if (!(err instanceof ProtocolError)) throw err;
      reply(res, STATUS_FOR[err.code], { error: err.code, message: err.message });
    })
    .catch(() => res.destroy());
}
