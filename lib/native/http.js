// Plain HTTP on the public port: health, the keyed POST routes (publish,
// disconnect; the server API, POST /api/<method>, is ./api.js), the browser
// client, and the entry of GET /sse (./sse.js). Upgrades are handled in
// ../worker/upgrade.js. POST /publish and /disconnect run the server API's own
// methods (../core/server.js) and keep their answers' shapes: 202 {seq} and
// 200 {disconnected}; a failure is {error: <code>, message}.
import { readFileSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { ErrorCode, GatewayError } from '../core/errors.js';
import { parseObject } from '../protocol/json-object.js';
import { runMethod } from '../core/server.js';
import { carriedBy } from '../transport/transport.js';
import { cutOnDefect, readBody, reply, replyError } from '../transport/http-io.js';
import { vendorFile } from './vendor.js';
import { handling } from '../transport/last-input.js';

const STATIC = {
  '/client.js': ['client/index.js', 'text/javascript; charset=utf-8'],
  '/core/errors.js': ['core/errors.js', 'text/javascript; charset=utf-8']
};

// The browser client's modules, served from lib/ at the paths their relative
// imports name: /client.js imports ./client/<name>.js and ./protocol/<name>.js,
// and those import ../core/errors.js.
const CLIENT_PART = /^\/client\/([a-z-]+\.js)$/;
const PROTOCOL_PART = /^\/protocol\/([a-z-]+\.js)$/;

/**
 * @param {object} options
 * @param {import('../worker/relay.js').WorkerRelay} options.relay
 * @param {import('./sse.js').SseStreams} options.streams GET /sse
 * @param {import('./api.js').ServerApi} options.api POST /api/<method>, and its key and body limit for POST /publish and /disconnect
 * @param {() => boolean} options.draining
 * @param {() => boolean} options.degraded whether a source the other protocols depend on is out of reach (their apps)
 * @param {{matches: (path: string) => boolean, request: (req, res, path) => void}[]} [options.routes] other protocols' HTTP routes (../wiring/ways-in.js)
 * @param {import('pino').Logger} options.log where a defect is told
 * @returns {(req, res) => void} the request listener
 */
export function createRequestHandler({ relay, streams, api, draining, degraded, routes = [], log }) {
  const files = new Map();

  return function handleRequest(req, res) {
    // A request pipelined behind a connection that took its socket over (a stream): it owns the socket.
    if (carriedBy(req.socket) !== undefined) return req.socket.destroy();
    const path = req.url.split('?', 1)[0];
    handling('http', `${req.method} ${path}`);
    if (draining()) res.setHeader('Connection', 'close');
    if (path === '/sse') return streams.request(req, res);
    if (path.startsWith('/api/')) return api.request(req, res, path.slice(5));
    if (path === '/publish' || path === '/disconnect') return keyed(req, res, path === '/publish' ? publish : disconnect);
    for (const route of routes) if (route.matches(path)) return route.request(req, res, path);
    if (req.method !== 'GET' && req.method !== 'HEAD') return reply(res, 404, { error: ErrorCode.NOT_FOUND });
    if (path === '/health') {
      if (draining()) return reply(res, 503, { status: 'draining' });
      // 200 all the same: every node loses Redis at once, and a load balancer
      // that took them all out would drop every held connection.
      // The apps table out of reach likewise: the apps loaded are served meanwhile.
      return reply(res, 200, { status: relay.unavailable || degraded() ? 'degraded' : 'ok' });
    }
    if (Object.hasOwn(STATIC, path)) return serveFile(res, ...STATIC[path]);
    const part = CLIENT_PART.exec(path) ?? PROTOCOL_PART.exec(path);
    if (part !== null) return serveFile(res, path.slice(1), STATIC['/client.js'][1]);
    // MessagePack and fossil-delta, for a browser client that uses them.
    const vendor = vendorFile(path);
    if (vendor !== undefined) return serveFile(res, vendor, STATIC['/client.js'][1]);
    reply(res, 404, { error: ErrorCode.NOT_FOUND });
  };

  /** A keyed POST route: the method and the key, then the body to `run`, answered 'ok(status, body)' or with its error. */
  function keyed(req, res, run) {
    const fail = (err) => {
      if (!(err instanceof GatewayError)) throw err;
      replyError(res, err, { error: err.code, message: err.message }, err.status === 405 ? { Allow: 'POST' } : undefined);
    };
    try {
      if (req.method !== 'POST') throw new GatewayError(ErrorCode.METHOD_NOT_ALLOWED, `${req.url.split('?', 1)[0]} takes POST`);
      api.checkKey(req);
    } catch (err) {
      req.resume();
      return fail(err);
    }
    readBody(req, api.maxPayload)
      .then(run)
      .then(([status, body]) => reply(res, status, body), fail)
      .catch(cutOnDefect(res, log));
  }

  // POST /publish and /disconnect are the server API's methods, checked
  // there (../core/server.js); a body's other keys are ignored.
  async function publish(text) {
    const { channel, data } = parseObject(text, 'body');
    const { seq } = await runMethod('publish', data === undefined ? { channel } : { channel, data }, api.context);
    return [202, { seq }];
  }

  async function disconnect(text) {
    const { user } = parseObject(text, 'body');
    return [200, await runMethod('disconnect', { user }, api.context)];
  }

  /** @param {string} file under lib/, or an absolute path */
  function serveFile(res, file, type) {
    let body = files.get(file);
    if (body === undefined) {
      try {
        body = readFileSync(isAbsolute(file) ? file : new URL(`../${file}`, import.meta.url));
      } catch {
        return reply(res, 404, { error: ErrorCode.NOT_FOUND });
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
