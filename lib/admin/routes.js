// The admin page, on the primary's operator listener under /admin: a login
// form, then a page that reads the cluster and acts on it. Every read and
// action is a server API method run by a worker (lib/primary/admin-calls.js),
// answered as the server API's core answers it: this file decides who may
// ask, never what is allowed.
//
//   GET  /admin                    the page (or the login form, without a session)
//   GET  /admin/admin.css|admin.js its style and its one module
//   POST /admin/login              form field `password`: a session cookie, then back to /admin
//   POST /admin/logout             ends the session
//   GET  /admin/api/view?prefix=&channel=&limit=&app=&protocol=  what the page shows, polled while it is open
//                                  (app: an app's channels of `protocol`, pusher or ably, instead of the native ones)
//   POST /admin/api/<action>       publish, disconnect or unsubscribe: {result} or {error: {code, message}};
//                                  a publish naming an `app` (a `protocol`, an `event`) goes to that app's channel
//
// A POST needs an Origin of this very host (a page elsewhere cannot make the
// browser act for the admin), and every route past the login a live session.
import { readFileSync } from 'node:fs';
import { ErrorCode, GatewayError } from '../core/errors.js';
import { parseObject } from '../protocol/json-object.js';
import { checkDepth } from '../protocol/validate.js';
import { cutOnDefect, readBody, reply } from '../transport/http-io.js';
import { AdminSessions, sessionCookie, setCookie } from './session.js';
import { Logins, LoginResult } from './logins.js';

const ACTIONS = new Set(['publish', 'disconnect', 'unsubscribe']);
const TOP_CHANNELS = 100; // the busiest channels the page lists
const LOGIN_BODY_BYTES = 4096;
const PROBLEM = '<!-- problem -->';
const PROBLEMS = {
  [LoginResult.WRONG]: [401, 'Wrong password.'],
  [LoginResult.LOCKED]: [429, 'Too many wrong passwords from this address: try again in a minute.'],
  crossSite: [403, 'Refused: the form was not sent from this page.']
};
// No inline script or style, nothing from elsewhere, never in a frame. The
// pages' empty icon (`data:,`, which keeps the browser from asking for
// /favicon.ico) is the one image a data: URL may be.
const HEADERS = {
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'same-origin', // not no-referrer: under it a browser sends `Origin: null` even to its own host
  'Cache-Control': 'no-store'
};

/**
 * @param {object} options
 * @param {string} options.password --admin-password
 * @param {(method: string, params: object) => Promise<object|null>} options.call a server API method, run by a worker
 * @param {() => object|null} options.stats the cluster's figures (lib/primary/cluster-stats.js)
 * @param {(result: string) => void} options.counted counts a login attempt by result
 * @param {number} options.maxPayload --max-payload: an action's body, as the server API takes it
 * @param {() => Map<string, number>} [options.appConnections] each app's connections on this node (every protocol's), where apps are served
 * @param {import('pino').Logger} options.log where a defect is told
 * @returns {(req, res) => void} the handler of every path under /admin
 */
export function createAdmin({ password, call, stats, counted, maxPayload, appConnections, log }) {
  const sessions = new AdminSessions();
  const logins = new Logins(password, counted);
  const files = {
    '/admin': ['index.html', 'text/html; charset=utf-8'],
    '/admin/admin.css': ['admin.css', 'text/css; charset=utf-8'],
    '/admin/admin.js': ['admin.js', 'text/javascript; charset=utf-8']
  };
  for (const file of Object.values(files)) file[0] = readFileSync(new URL(file[0], import.meta.url));
  const loginPage = readFileSync(new URL('login.html', import.meta.url), 'utf8');
  const sessionOf = (req) => sessions.verify(sessionCookie(req.headers.cookie));

  const showLogin = (res, problem) => {
    const [status, message] = PROBLEMS[problem] ?? [200, ''];
    const headers = { ...HEADERS, 'Content-Type': 'text/html; charset=utf-8' };
    if (problem === LoginResult.LOCKED) headers['Retry-After'] = '60';
    res.writeHead(status, headers).end(loginPage.replace(PROBLEM, message));
  };
  const back = (res, cookie) => res.writeHead(303, { ...HEADERS, Location: '/admin', 'Set-Cookie': cookie }).end();

  async function logIn(req, res) {
    if (!sameOrigin(req)) return showLogin(res, 'crossSite');
    const body = await readBody(req, LOGIN_BODY_BYTES).catch(() => '');
    const { result } = logins.attempt(req.socket.remoteAddress, new URLSearchParams(body).get('password') ?? undefined);
    if (result !== LoginResult.OK) return showLogin(res, result);
    back(res, setCookie(sessions.issue()));
  }

  async function view(url, res) {
    const query = url.searchParams;
    const prefix = query.get('prefix') ?? '';
    const channel = query.get('channel') ?? '';
    const limit = Number(query.get('limit') ?? 20);
    // An app's channels of one protocol (and none of the native ones) when the page picked one.
    const app = query.get('app') ?? '';
    const protocol = query.get('protocol') ?? '';
    const within = app === '' ? {} : { app, ...(protocol === '' ? {} : { protocol }) };
    const [info, apps, channels, presence, history] = await Promise.all([
      call('info', {}),
      appConnections === undefined ? undefined : call('apps', {}),
      call('channels', { ...within, ...(prefix === '' ? {} : { prefix }) }),
      channel === '' ? undefined : call('presence', { ...within, channel }),
      channel === '' ? undefined : call('history', { ...within, channel, limit, reverse: true })
    ]);
    reply(res, 200, { stats: stats(), info, apps: withConnections(apps, appConnections), channels: busiest(channels), presence, history }, HEADERS);
  }

  async function act(action, req, res) {
    if (!ACTIONS.has(action)) {
      req.resume();
      return refuse(res, new GatewayError(ErrorCode.NOT_FOUND, `no action ${JSON.stringify(action.slice(0, 64))}`));
    }
    let params;
    try {
      params = parseObject(await readBody(req, maxPayload), 'body');
      // Held to the core's depth limit here, before the call crosses to a
      // worker: the IPC's JSON.stringify recurses, and a stack overflow there
      // would end the primary.
      for (const value of Object.values(params)) checkDepth(value);
    } catch (err) {
      if (!(err instanceof GatewayError)) throw err;
      return refuse(res, err);
    }
    const answer = await call(action, params);
    if (answer === null) return refuse(res, new GatewayError(ErrorCode.UNAVAILABLE, 'the worker failed this call without an error code'));
    reply(res, 200, answer, HEADERS);
  }

  return function admin(req, res) {
    route(req, res).catch(cutOnDefect(res, log));
  };

  async function route(req, res) {
    const url = new URL(req.url, 'http://admin');
    const path = url.pathname === '/admin/' ? '/admin' : url.pathname;
    const post = req.method === 'POST';
    if (!post && req.method !== 'GET') return refuse(res, new GatewayError(ErrorCode.METHOD_NOT_ALLOWED, 'GET or POST'), { Allow: 'GET, POST' });
    if (post && path === '/admin/login') return logIn(req, res);
    if (post && !sameOrigin(req)) {
      req.resume();
      return refuse(res, new GatewayError(ErrorCode.FORBIDDEN, 'cross-site request refused: the Origin is not this page'));
    }
    const session = sessionOf(req);
    if (post && path === '/admin/logout') {
      req.resume();
      if (session !== undefined) sessions.end(session);
      return back(res, setCookie(undefined));
    }
    if (!post && path === '/admin' && session === undefined) return showLogin(res);
    if (!post && Object.hasOwn(files, path)) {
      const [body, type] = files[path];
      return res.writeHead(200, { ...HEADERS, 'Content-Type': type }).end(body);
    }
    if (post ? !path.startsWith('/admin/api/') : path !== '/admin/api/view') {
      req.resume();
      return refuse(res, new GatewayError(ErrorCode.NOT_FOUND, 'no such admin route'));
    }
    if (session === undefined) {
      req.resume();
      return refuse(res, new GatewayError(ErrorCode.UNAUTHORIZED, 'log in first: no session, or it expired'));
    }
    if (post) return act(path.slice('/admin/api/'.length), req, res);
    return view(url, res);
  }
}

/** Whether a request comes from a page of this very host (a tunnel's localhost:port included). */
function sameOrigin(req) {
  const { origin, host } = req.headers;
  return host !== undefined && (origin === `http://${host}` || origin === `https://${host}`);
}

/** The apps answer with each app's connections on this node. */
function withConnections(answer, appConnections) {
  if (answer?.result === undefined) return answer;
  const counts = appConnections();
  return { result: { apps: answer.result.apps.map((app) => ({ ...app, connections: counts.get(app.appId) ?? 0 })) } };
}

/** The channels answer cut to the busiest, for a page that lists them by subscribers. */
function busiest(answer) {
  if (answer?.result === undefined) return answer;
  const all = Object.entries(answer.result.channels);
  const top = all.sort((a, b) => b[1].subscribers - a[1].subscribers || (a[0] < b[0] ? -1 : 1)).slice(0, TOP_CHANNELS);
  return { result: { total: all.length, top: top.map(([name, { subscribers }]) => ({ name, subscribers })) } };
}

/** A refusal as the admin page reads it, with the error family's status. */
function refuse(res, err, headers) {
  reply(res, err.status, { error: { code: err.code, message: err.message } }, { ...HEADERS, ...headers });
}
