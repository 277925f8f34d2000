// Ably's REST API, as ably-js calls it at the root of the host: GET /time,
// POST /keys/<keyName>/requestToken (a TokenRequest for a token: ./tokens.js),
// POST /channels/<name>/messages (one message or many, published in order;
// one with an id the client gave is published once, a retry answered with
// its first serial),
// GET /channels/<name>/messages (the channel's history, as the gateway keeps
// it: --history-size messages for --history-ttl seconds), GET
// /channels/<name>/presence (its members, as PRESENT messages), GET
// /channels/<name> (its status: active, and its occupancy).
// A request is authorised by its key (Basic) or a token (Bearer, base64 as
// ably-js sends it, or raw); bodies are JSON or MessagePack by Content-Type,
// answers by Accept. A refusal is Ably's: `{"error": {message, code,
// statusCode}}` as `application/json` exactly (ably-js matches the header
// literally), with X-Ably-Errorcode and X-Ably-Errormessage.
import { decodeValue, encode } from '../codecs/msgpack.js';
import { GatewayError } from '../core/errors.js';
import { channelCounts, publish } from '../core/server.js';
import { Skipped } from '../protocol/outcomes.js';
import { cutOnDefect, decodeSegment, readBytes } from '../transport/http-io.js';
import { metrics } from '../session/metrics.js';
import { clientIp } from '../session/client-ip.js';
import { takeBackendEvents } from '../session/app-counts.js';
import { allows } from './capability.js';
import { checkName, internalName, membersChannel, noncesChannel } from './channels.js';
import { AblyCode, AblyError, errorInfo } from './errors.js';
import { checkKeyInClear, keyOfCredential } from './keys.js';
import { freshMessageId, idempotencyKeyOf, messageData } from './messages.js';
import { isPresenceEvent } from './presence.js';
import { sinceOf } from './protocol.js';
import { issueToken, verifyToken } from './tokens.js';

const MSGPACK = 'application/x-msgpack';
const MAX_MESSAGES = 100;
const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 1000; // messages in one history read
const TOKEN_REQUEST = /^\/keys\/([A-Za-z0-9._-]+)\/requestToken$/;
const MESSAGES = /^\/channels\/([^/]+)\/messages$/;
const PRESENCE = /^\/channels\/([^/]+)\/presence$/;
const CHANNEL = /^\/channels\/([^/]+)$/;

/** Whether a path is one of Ably's REST routes. */
export function isRestPath(path) {
  return path === '/time' || path.startsWith('/keys/') || path.startsWith('/channels/');
}

export class AblyRest {
  /**
   * @param {object} options
   * @param {number} options.maxPayload --max-payload: the largest body
   * @param {import('../pusher/apps.js').Apps} options.apps
   * @param {import('../core/server.js').ServerContext} options.context Ably's command core and the relay
   * @param {import('./presence.js').AblyPresence} options.members
   * @param {{ablyBasicAuth: string, trustForwarded: boolean}} options.keyPolicy where a key is taken in clear (./keys.js)
   * @param {import('pino').Logger} options.log where a defect is told
   */
  constructor({ maxPayload, apps, context, members, keyPolicy, log }) {
    this.maxPayload = maxPayload;
    this.apps = apps;
    this.context = context;
    this.members = members;
    this.keyPolicy = keyPolicy;
    this.log = log;
  }

  request(req, res, path) {
    if (allowOrigin(req, res)) return;
    const binary = (req.headers.accept ?? '').includes(MSGPACK);
    let label = 'ably_unknown';
    const answer = (status, result) => {
      const body = result instanceof Page ? result.items : result;
      const bytes = binary ? encode(body) : Buffer.from(JSON.stringify(body));
      const headers = { 'Content-Type': binary ? MSGPACK : 'application/json', 'Content-Length': bytes.length };
      if (result instanceof Page && result.next !== undefined) headers.Link = `<${result.next}>; rel="next"`;
      res.writeHead(status, headers);
      res.end(bytes);
    };
    const fail = (err) => {
      if (!(err instanceof GatewayError)) throw err;
      const error = errorInfo(err);
      metrics.apiRequests.inc({ method: label, code: err.code, app: 'unknown' });
      const text = JSON.stringify({ error });
      res.writeHead(error.statusCode, {
        'Content-Type': 'application/json',
        'Content-Length': Buffer.byteLength(text),
        'X-Ably-Errorcode': String(error.code),
        'X-Ably-Errormessage': encodeURIComponent(error.message)
      });
      res.end(text);
    };
    let run;
    try {
      if (path === '/time' && req.method === 'GET') [label, run] = ['ably_time', async () => [Date.now()]];
      else if (req.method === 'POST' && TOKEN_REQUEST.test(path)) [label, run] = ['ably_request_token', (body) => issueToken(this.apps, TOKEN_REQUEST.exec(path)[1], body, (app, nonce) => this.claimNonce(app, nonce))];
      else if (req.method === 'POST' && MESSAGES.test(path)) [label, run] = ['ably_publish', (body) => this.publish(req, decodeSegment(MESSAGES.exec(path)[1]), body)];
      else if (req.method === 'GET' && MESSAGES.test(path)) [label, run] = ['ably_history', () => this.history(req, decodeSegment(MESSAGES.exec(path)[1]))];
      else if (req.method === 'GET' && PRESENCE.test(path)) [label, run] = ['ably_presence', () => this.presence(req, decodeSegment(PRESENCE.exec(path)[1]))];
      else if (req.method === 'GET' && CHANNEL.test(path)) [label, run] = ['ably_channel', () => this.status(req, decodeSegment(CHANNEL.exec(path)[1]))];
      else throw new AblyError(AblyCode.NOT_FOUND, 'no such Ably route');
    } catch (err) {
      req.resume();
      return fail(err);
    }
    readBytes(req, this.maxPayload)
      .then((bytes) => run(bodyOf(req, bytes)))
      .then((result) => {
        metrics.apiRequests.inc({ method: label, code: 'ok', app: 'unknown' });
        answer(label === 'ably_publish' ? 201 : 200, result);
      }, fail)
      .catch(cutOnDefect(res, this.log));
  }

  /** POST /channels/<name>/messages: each message published in order; answered with their serials. */
  async publish(req, name, body) {
    const { app, clientId } = await this.authoriseOn(req, name, 'publish', 'publish on');
    const messages = Array.isArray(body) ? body : [body];
    if (messages.length === 0 || messages.length > MAX_MESSAGES) throw new AblyError(AblyCode.BAD_REQUEST, `1 to ${MAX_MESSAGES} messages`);
    const timestamp = Date.now();
    const base = freshMessageId('rest', timestamp);
    const who = { clientId: clientId === '*' ? undefined : clientId, wildcard: clientId === undefined || clientId === '*' };
    const data = messages.map((message, i) => messageData(message, who, { id: `${base}:${i}`, connectionId: undefined, timestamp }));
    const channel = internalName(app.appId, name);
    this.context.commands.namespace(channel);
    await takeBackendEvents(this.context.relay, app, data.length);
    const serials = [];
    for (const [i, message] of data.entries()) {
      // A message the client named (ably-js names each of a REST publish, so a retry names them again) is published once.
      const idempotencyKey = messages[i].id === message.id ? idempotencyKeyOf(message.id) : undefined;
      const { seq, epoch } = await publish({ channel, data: JSON.stringify(message), idempotencyKey }, this.context);
      serials.push(`${epoch}:${seq}`);
    }
    return { channel: name, messageId: base, serials };
  }

  /**
   * GET /channels/<name>/messages: `limit` (1 to 1000, 100 by default),
   * `direction` (`backwards`, newest first, by default, or `forwards`),
   * `start` and `end` (ms since 1970, inclusive), `from_serial` (ably-js's
   * `untilAttach`: the attach's channelSerial, nothing later). A page with
   * more after it links the next (`Link: <./messages?…>; rel="next"`, the
   * same query from past its last message: `cursor`).
   * @returns {Promise<Page>} the messages, each with its serial
   */
  async history(req, name) {
    const { app } = await this.authoriseOn(req, name, 'history', 'read the history of');
    const query = new URL(req.url, 'http://gateway').searchParams;
    const limit = query.get('limit') === null ? DEFAULT_LIMIT : Number(query.get('limit'));
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw new AblyError(AblyCode.BAD_REQUEST, `limit is 1 to ${MAX_LIMIT}`);
    const direction = query.get('direction') ?? 'backwards';
    if (direction !== 'backwards' && direction !== 'forwards') throw new AblyError(AblyCode.BAD_REQUEST, 'direction is backwards or forwards');
    const [start, end] = ['start', 'end'].map((bound) => (query.get(bound) === null ? undefined : Number(query.get(bound))));
    if ([start, end].some((bound) => bound !== undefined && !Number.isFinite(bound))) throw new AblyError(AblyCode.BAD_REQUEST, 'start and end are ms since 1970');
    const channel = internalName(app.appId, name);
    const { historySize } = this.context.commands.namespace(channel);
    if (historySize === 0) return new Page([]);
    // All the channel keeps (a bounded number), in the direction asked, then the bounds and the limit.
    const reverse = direction === 'backwards';
    const { epoch, messages } = await this.context.relay.history(channel, { limit: historySize, reverse });
    const [until, cursor] = ['from_serial', 'cursor'].map((param) => seqOf(query.get(param), epoch, param));
    const out = [];
    for (const { seq, data } of messages) {
      if (isPresenceEvent(data) || (until !== undefined && seq > until) || (cursor !== undefined && (reverse ? seq >= cursor : seq <= cursor))) continue;
      const message = JSON.parse(data);
      if ((start !== undefined && message.timestamp < start) || (end !== undefined && message.timestamp > end)) continue;
      if (out.length === limit) {
        query.set('cursor', out.at(-1).serial);
        return new Page(out, `./messages?${query.toString().replaceAll(',', '%2C')}`);
      }
      out.push({ ...message, serial: `${epoch}:${seq}` });
    }
    return new Page(out);
  }

  /** GET /channels/<name>/presence: its members, as PRESENT messages (`clientId` and `connectionId` narrow them). */
  async presence(req, name) {
    const { app } = await this.authoriseOn(req, name, 'subscribe', 'see the members of');
    const query = new URL(req.url, 'http://gateway').searchParams;
    const [clientId, connectionId] = [query.get('clientId'), query.get('connectionId')];
    const members = await this.members.read(membersChannel(internalName(app.appId, name)));
    return members.filter((member) => (clientId === null || member.clientId === clientId) && (connectionId === null || member.connectionId === connectionId));
  }

  /**
   * Claims a TokenRequest's nonce for the whole cluster: a nonce is an
   * idempotency key on the app's nonce channel, which the engine keeps on
   * every node for as long as a TokenRequest is taken (20 minutes: 10 either
   * side of its timestamp, ./channels.js), so a second claim is a duplicate.
   * @returns {Promise<boolean>} whether it is the nonce's first claim
   */
  async claimNonce(app, nonce) {
    const { skipped } = await publish({ channel: noncesChannel(app.appId), data: '0', idempotencyKey: nonce }, this.context);
    return skipped !== Skipped.DUPLICATE;
  }

  /**
   * GET /channels/<name>: its status, as ably-js's `channel.status()` reads
   * it: active while it has subscribers, and its occupancy, cluster-wide
   * (every attached connection receives, and may publish as its capability
   * says: each is counted as both).
   */
  async status(req, name) {
    const { app } = await this.authoriseOn(req, name, 'subscribe', 'see the status of');
    const channel = internalName(app.appId, name);
    const [counts, members] = await Promise.all([channelCounts(this.context.relay, channel), this.members.read(membersChannel(channel))]);
    const connections = counts[channel] ?? 0;
    const presenceConnections = new Set(members.map((member) => member.connectionId)).size;
    const occupancy = { connections, publishers: connections, subscribers: connections, presenceConnections, presenceMembers: members.length, presenceSubscribers: connections };
    return { channelId: name, status: { isActive: connections > 0, occupancy: { metrics: occupancy } } };
  }

  /**
   * The request's credential, allowed `operation` on channel `name` (`doing`: what the refusal says it may not do).
   * @returns {Promise<{app, capability, clientId: string|undefined}>}
   * @throws {AblyError} 40010 (the name), 40160 (the capability), the credential's refusal
   */
  async authoriseOn(req, name, operation, doing) {
    const credential = await this.authorise(req);
    checkName(name);
    if (!allows(credential.capability, name, operation)) throw new AblyError(AblyCode.CAPABILITY, `the credential may not ${doing} ${name}`);
    return credential;
  }

  /** @returns {Promise<{app, capability, clientId: string|undefined}>} what the request's key or token may do */
  async authorise(req) {
    const header = req.headers.authorization ?? '';
    if (header.startsWith('Basic ')) {
      checkKeyInClear(req, clientIp(req, this.keyPolicy.trustForwarded), this.keyPolicy);
      const found = keyOfCredential(this.apps, Buffer.from(header.slice(6), 'base64').toString());
      if (found === undefined) throw new AblyError(AblyCode.NO_CREDENTIALS, 'invalid key');
      return { app: found.app, capability: found.capability, clientId: undefined };
    }
    if (header.startsWith('Bearer ')) {
      const given = header.slice(7);
      const decoded = Buffer.from(given, 'base64').toString();
      return verifyToken(this.apps, decoded.split('.').length === 3 ? decoded : given);
    }
    throw new AblyError(AblyCode.NO_CREDENTIALS, 'a key (Basic) or a token (Bearer) is required');
  }
}

/**
 * CORS, as ably-js in a page asks (its requests carry their credential in
 * Authorization, never a cookie, so any origin may send them): the origin
 * echoed with credentials allowed, Ably's headers readable; a preflight is
 * answered here.
 * @returns {boolean} whether the request was a preflight, answered
 */
function allowOrigin(req, res) {
  const { origin } = req.headers;
  if (origin === undefined) return false;
  res.setHeader('Access-Control-Allow-Origin', origin);
  res.setHeader('Access-Control-Allow-Credentials', 'true');
  res.setHeader('Access-Control-Expose-Headers', 'Link, X-Ably-Errorcode, X-Ably-Errormessage');
  res.setHeader('Vary', 'Origin');
  if (req.method !== 'OPTIONS') return false;
  res.writeHead(204, {
    'Access-Control-Allow-Methods': 'GET, POST',
    'Access-Control-Allow-Headers': 'Authorization, Content-Type, Accept, X-Ably-Version, Ably-Agent, X-Ably-ClientId',
    'Access-Control-Max-Age': '600'
  });
  res.end();
  return true;
}

/** A page of a listing, and the link to the next one (relative to the listing's path), if there is more. */
class Page {
  constructor(items, next) {
    this.items = items;
    this.next = next;
  }
}

/**
 * @param {string|null} serial a channelSerial a query bounds the history by
 * @returns {number|undefined} its seq in the channel's sequence now
 * @throws {AblyError} 40003: not a serial of this channel's sequence
 */
function seqOf(serial, epoch, param) {
  if (serial === null) return undefined;
  const at = sinceOf(serial);
  if (at === undefined || at.epoch !== epoch) throw new AblyError(AblyCode.BAD_PARAMETER, `${param} is not a serial of this channel's messages now`);
  return at.seq;
}

/** The request's body: JSON or MessagePack by its Content-Type; none for an empty one. */
function bodyOf(req, bytes) {
  if (bytes.length === 0) return undefined;
  try {
    return (req.headers['content-type'] ?? '').includes(MSGPACK) ? decodeValue(bytes) : JSON.parse(bytes.toString());
  } catch {
    throw new AblyError(AblyCode.BAD_REQUEST, 'the body is not JSON or MessagePack as its Content-Type says');
  }
}
