// Pusher's HTTP API on the public port: /apps/<app_id>/…, each request
// signed as Pusher signs it (auth_key, auth_timestamp within 600 s,
// auth_version 1.0, body_md5 of a body, auth_signature: hex HMAC-SHA256 of
// "METHOD\nPATH\n<query sorted by key, without auth_signature>"). Events
// are published through the server's operations (lib/core/server.js), on
// Pusher's command core: its names, the app's channels only. Answers are
// Pusher's: 200 with a JSON object, or the status and a plain-text reason.
import { ErrorCode, GatewayError } from '../core/errors.js';
import { parseObject } from '../protocol/json-object.js';
import { channelCounts, publish as publishChecked } from '../core/server.js';
import { cutOnDefect, decodeSegment, readBody, reply } from '../transport/http-io.js';
import { metrics } from '../session/metrics.js';
import { Call } from '../core/ipc.js';
import { appPrefix, checkName, eventChannel, internalName, isInternal, isPresence, kindOf, pusherName } from './channels.js';
import { eventData, PusherCode } from './frames.js';
import { sameText } from '../core/same-text.js';
import { md5, signatureMatches } from './signatures.js';
import { maxEventBytes } from './app-limits.js';
import { takeBackendEvents } from '../session/app-counts.js';
import { membersOf } from './presence-data.js';

const MAX_TIMESTAMP_SKEW_S = 600;
const MAX_EVENT_NAME = 200;
const SOCKET_ID = /^\d+\.\d+$/;
const ROUTE = /^\/apps\/([^/]+)\/(.+)$/;

export class PusherHttpApi {
  /**
   * @param {object} options
   * @param {number} options.maxPayload --max-payload: the most bytes a request's body may have
   * @param {import('./apps.js').Apps} options.apps
   * @param {import('../core/server.js').ServerContext} options.context Pusher's command core, the relay, presence
   * @param {import('pino').Logger} options.log where a defect is told
   */
  constructor({ maxPayload, apps, context, log }) {
    this.apps = apps;
    this.log = log;
    this.context = context;
    this.maxPayload = maxPayload;
  }

  request(req, res, path) {
    const match = ROUTE.exec(path);
    let label = 'pusher_unknown';
    let app, route;
    const count = (code) => metrics.apiRequests.inc({ method: label, code, app: app?.appId ?? 'unknown' });
    const fail = (err) => {
      if (!(err instanceof GatewayError)) throw err;
      count(err.code);
      replyText(res, err.status, err.message);
    };
    try {
      app = match === null ? undefined : this.apps.byId.get(decodeSegment(match[1]));
      route = match === null ? undefined : routeOf(req.method, match[2]);
      if (route !== undefined) label = `pusher_${route.name}`;
      if (app === undefined || route === undefined) throw new GatewayError(ErrorCode.NOT_FOUND, app === undefined ? 'Unknown app' : 'Unknown route');
    } catch (err) {
      req.resume();
      return fail(err);
    }
    readBody(req, this.maxPayload)
      .then((body) => {
        const query = new URL(req.url, 'http://gateway').searchParams;
        authenticate(app, req.method, path, query, body);
        return route.run(this.context, app, { query, body: body === '' ? undefined : parseObject(body, 'body'), params: route.params });
      })
      .then((answer) => {
        count('ok');
        reply(res, 200, answer);
      }, fail)
      .catch(cutOnDefect(res, this.log));
  }
}

/**
 * Pusher's request signature, checked in its order: the key, the version,
 * the timestamp, the body's MD5, then the signature over all of them.
 * @throws {GatewayError} unauthorized (401)
 */
function authenticate(app, method, path, query, body) {
  const refuse = (why) => {
    throw new GatewayError(ErrorCode.UNAUTHORIZED, why);
  };
  if (!sameText(query.get('auth_key') ?? '', app.key)) refuse('Unknown auth_key');
  if (query.get('auth_version') !== '1.0') refuse('auth_version must be 1.0');
  const timestamp = Number(query.get('auth_timestamp'));
  if (!Number.isInteger(timestamp) || Math.abs(Date.now() / 1000 - timestamp) > MAX_TIMESTAMP_SKEW_S) {
    refuse(`Timestamp expired: auth_timestamp must be within ${MAX_TIMESTAMP_SKEW_S} s of the server's time`);
  }
  if (body !== '' && !sameText(query.get('body_md5') ?? '', md5(body))) refuse('body_md5 does not match the body');
  const signed = [...query.keys()]
    .filter((key) => key !== 'auth_signature')
    .sort()
    .map((key) => `${key.toLowerCase()}=${query.get(key)}`)
    .join('&');
  if (!signatureMatches(app.secret, `${method}\n${path}\n${signed}`, query.get('auth_signature'))) refuse('Invalid signature');
}

// ---- The routes ----

const ROUTES = [
  { method: 'POST', pattern: /^events$/, name: 'events', run: events },
  { method: 'POST', pattern: /^batch_events$/, name: 'batch_events', run: batchEvents },
  { method: 'GET', pattern: /^channels$/, name: 'channels', run: channels },
  { method: 'GET', pattern: /^channels\/([^/]+)$/, name: 'channel', run: channel },
  { method: 'GET', pattern: /^channels\/([^/]+)\/users$/, name: 'users', run: users },
  { method: 'POST', pattern: /^users\/([^/]+)\/terminate_connections$/, name: 'terminate_connections', run: terminate }
];

function routeOf(method, rest) {
  for (const route of ROUTES) {
    if (route.method !== method) continue;
    const match = route.pattern.exec(rest);
    if (match !== null) return { ...route, params: match.slice(1).map(decodeSegment) };
  }
  return undefined;
}

/** POST /apps/<id>/events: {name, data, channel | channels, socket_id?, info?} -> {} or {channels: {name: info}} */
async function events(context, app, { body }) {
  const event = checkEvent(app, body);
  await takeBackendEvents(context.relay, app, event.channels.length);
  await Promise.all(event.internals.map((internal) => publish(context, internal, event)));
  if (event.info.size === 0) return {};
  const infos = await Promise.all(event.internals.map((internal) => channelInfo(context, internal, event.info)));
  const out = Object.create(null); // a channel may be called __proto__
  event.channels.forEach((name, i) => (out[name] = infos[i]));
  return { channels: out };
}

/** POST /apps/<id>/batch_events: {batch: [event, …]} (at most 10), each with one channel -> {} or {batch: [info, …]} */
async function batchEvents(context, app, { body }) {
  const batch = body?.batch;
  const max = app.maxEventBatchSize;
  if (!Array.isArray(batch) || batch.length === 0 || batch.length > max) throw badRequest(`batch must be an array of 1 to ${max} events`);
  const checked = batch.map((event, i) => {
    const one = checkEvent(app, event, `batch[${i}].`);
    if (one.channels.length !== 1) throw badRequest(`batch[${i}] names one channel`);
    return one;
  });
  await takeBackendEvents(context.relay, app, checked.length);
  await Promise.all(checked.map((event) => publish(context, event.internals[0], event)));
  if (checked.every((event) => event.info.size === 0)) return {};
  return { batch: await Promise.all(checked.map((event) => channelInfo(context, event.internals[0], event.info))) };
}

/** GET /apps/<id>/channels?filter_by_prefix=&info=user_count -> {channels: {name: {user_count?}}}, the occupied ones */
async function channels(context, app, { query }) {
  const prefix = query.get('filter_by_prefix') ?? '';
  const info = infoOf(query.get('info'), ['user_count']);
  if (info.has('user_count') && !prefix.startsWith('presence-')) throw badRequest('info=user_count needs filter_by_prefix=presence-');
  const names = Object.keys(await appChannels(context, app, prefix));
  const counts = info.has('user_count') ? await Promise.all(names.map((name) => userCount(context, internalName(app.appId, name)))) : [];
  const out = Object.create(null); // a channel may be called __proto__
  names.forEach((name, i) => (out[name] = info.has('user_count') ? { user_count: counts[i] } : {}));
  return { channels: out };
}

/**
 * The app's occupied channels starting with `prefix`, cluster-wide, with
 * their subscribers (the gateway's own channels left out).
 * @returns {Promise<Object<string, number>>} client name -> subscribers
 */
export async function appChannels(context, app, prefix = '') {
  const counts = await channelCounts(context.relay, appPrefix(app.appId));
  const out = Object.create(null);
  for (const [internal, count] of Object.entries(counts)) {
    const name = pusherName(internal);
    if (count === 0 || !isInternal(internal) || internal !== internalName(app.appId, name) || !name.startsWith(prefix)) continue;
    out[name] = count;
  }
  return out;
}

/** GET /apps/<id>/channels/<name>?info=user_count,subscription_count -> {occupied, …} */
async function channel(context, app, { query, params: [name] }) {
  const info = infoOf(query.get('info'), ['user_count', 'subscription_count', 'cache']);
  checkInfoFor(checkName(name), info);
  return channelInfo(context, internalName(app.appId, name), info);
}

/** GET /apps/<id>/channels/<name>/users -> {users: [{id}]}, of a presence channel */
async function users(context, app, { params: [name] }) {
  if (!isPresence(kindOf(checkName(name)))) throw badRequest('users are listed for presence channels only');
  return { users: Object.keys(await members(context, internalName(app.appId, name))).map((id) => ({ id })) };
}

/** POST /apps/<id>/users/<user_id>/terminate_connections -> {}: every connection signed in as the user, on every worker and node */
async function terminate(context, app, { params: [user] }) {
  const channel = eventChannel(app.appId, `#server-to-user-${user}`);
  await context.relay.call(Call.CLOSE_SUBSCRIBERS, { channel, code: PusherCode.UNAUTHORIZED, reason: 'connection terminated by the server' });
  return {};
}

/** An event checked whole (checkEvent), published on one of its channels as the event Pusher's clients receive. */
function publish(context, internal, { name: event, data, socketId }) {
  return publishChecked({ channel: internal, data: JSON.stringify(eventData(event, data)), exclude: socketId }, context);
}

/** What the channel and events routes tell of a channel (its `info` checked first: checkInfoFor), asked of the cluster at once. */
async function channelInfo(context, internal, info) {
  const [counts, users, cache] = await Promise.all([
    channelCounts(context.relay, internal),
    info.has('user_count') ? userCount(context, internal) : undefined,
    info.has('cache') ? cached(context, internal) : undefined
  ]);
  const count = counts[internal] ?? 0;
  const out = { occupied: count > 0 };
  if (info.has('subscription_count')) out.subscription_count = count;
  if (users !== undefined) out.user_count = users;
  return cache === undefined ? out : Object.assign(out, cache);
}

/** A cache channel's last event: {cache: {value, ttl}}, or nothing when it has none. */
async function cached(context, internal) {
  const { latest, historyTtl } = context.commands.namespace(internal);
  if (!latest) throw badRequest('cache is for cache channels only');
  const { messages } = await context.relay.history(internal, { limit: 1, reverse: true });
  return messages.length === 0 ? {} : { cache: { value: JSON.parse(messages[0].data).data, ttl: historyTtl } };
}

/** Subscribers per channel, cluster-wide, of the channels starting with `prefix`. */
async function userCount(context, internal) {
  return Object.keys(await members(context, internal)).length;
}

/** A presence channel's members (its name checked: a presence channel of the app): user id -> info, one per user. */
export async function members(context, internal) {
  const { clients } = await context.presence.read(internal, false);
  return membersOf(clients);
}

/** The attributes an `info` (a query's, or an event's) asks for, each one of `known`. */
function infoOf(text, known) {
  const info = new Set((text ?? '').split(',').filter((attribute) => attribute !== ''));
  const unknown = [...info].find((attribute) => !known.includes(attribute));
  if (unknown !== undefined) throw badRequest(`info may ask for ${known.join(', ')}`);
  return info;
}

/** Whether `info` asks only what channel `name` can tell: user_count of a presence channel. */
function checkInfoFor(name, info) {
  if (info.has('user_count') && !isPresence(kindOf(name))) throw badRequest(`info=user_count is for presence channels only (${name} is not one)`);
}


/** An event of the HTTP API, checked whole before anything is published. */
function checkEvent(app, body, at = '') {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw badRequest(`${at || 'the body'} must be a JSON object`);
  const { name, data, channel, channels = channel === undefined ? undefined : [channel], socket_id: socketId } = body;
  checkEventName(name, `${at}name`);
  if (typeof data !== 'string') throw badRequest(`${at}data must be a string (JSON-encode it)`);
  if (Buffer.byteLength(data) > maxEventBytes(app)) throw new GatewayError(ErrorCode.PAYLOAD_TOO_LARGE, `${at}data is over ${maxEventBytes(app)} bytes`);
  if (!Array.isArray(channels) || channels.length === 0 || channels.length > app.maxEventChannels) {
    throw badRequest(`${at}channels must be an array of 1 to ${app.maxEventChannels} channel names`);
  }
  const internals = channels.map((one) => {
    try {
      return eventChannel(app.appId, one);
    } catch (err) {
      throw badRequest(`${at}channels: ${err.message}`);
    }
  });
  if (socketId !== undefined && (typeof socketId !== 'string' || !SOCKET_ID.test(socketId))) throw badRequest(`${at}socket_id must be a socket_id (digits.digits)`);
  if (body.info !== undefined && typeof body.info !== 'string') throw badRequest(`${at}info must be a string: attributes separated by commas`);
  const info = infoOf(body.info, ['user_count', 'subscription_count']);
  for (const name of channels) checkInfoFor(name, info);
  return { name, data, channels, internals, socketId, info };
}

/**
 * An event name an application may publish: not one of Pusher's own.
 * @throws {GatewayError} bad_request, naming `what`
 */
export function checkEventName(name, what = 'name') {
  if (typeof name !== 'string' || name === '' || name.length > MAX_EVENT_NAME) throw badRequest(`${what} must be a string of 1 to ${MAX_EVENT_NAME} characters`);
  if (name.startsWith('pusher:') || name.startsWith('pusher_internal:')) throw badRequest(`${what}: pusher: and pusher_internal: events are Pusher's own`);
}

function badRequest(message) {
  return new GatewayError(ErrorCode.BAD_REQUEST, message);
}

function replyText(res, status, text) {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}
