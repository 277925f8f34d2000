// What the Pusher tests share: a gateway with Pusher apps, the real
// pusher-js (its Node build) and `pusher` server SDK pointed at it, and a
// raw WebSocket that records every Pusher frame (for what pusher-js would
// hide: the exact error codes, frames that must not arrive).
import { createHash, createHmac } from 'node:crypto';
import http from 'node:http';
import { once } from 'node:events';
import WebSocket from 'ws';
import PusherJs from 'pusher-js';
import Pusher from 'pusher';
import { eventually, startGateway } from '../../scripts/harness/gateway.js';
import { clientElsewhere } from './even-balance.js';

export const APP = { appId: 'app-1', key: 'key-1', secret: 'a-secret-of-24-characters' };
export const OTHER_APP = { appId: 'app-2', key: 'key-2', secret: 'another-secret-24-chars!' };

/** A gateway with APP (client events on) and OTHER_APP, from a config file or flags. */
export function startPusherGateway(args = [], options = {}) {
  return startGateway(['--pusher-app-id', APP.appId, '--pusher-key', APP.key, '--pusher-secret', APP.secret, '--pusher-client-events', ...args], options);
}

/** The `pusher` server SDK for an app on the gateway. */
export function serverSdk(gw, app = APP) {
  return new Pusher({ appId: app.appId, key: app.key, secret: app.secret, host: '127.0.0.1', port: String(gw.port), useTLS: false });
}

/**
 * pusher-js as a user configures it for a self-hosted server; private and
 * presence channels are authorised by the server SDK (the application's
 * auth endpoint, in process).
 * @param {object} [member] {user_id, user_info} for presence channels
 */
export function pusherClient(gw, { app = APP, member, sdk = serverSdk(gw, app), ...options } = {}) {
  return new PusherJs(app.key, { ...clientOptions(gw, member, sdk), ...options });
}

/** pusher-js's options (Laravel Echo passes them on) for the gateway: the README's, with the SDK as the auth endpoint. */
export function clientOptions(gw, member, sdk) {
  return {
    wsHost: '127.0.0.1',
    wsPort: gw.port,
    forceTLS: false,
    enabledTransports: ['ws'],
    cluster: 'mt1',
    disableStats: true,
    channelAuthorization: {
      customHandler: ({ socketId, channelName }, callback) => callback(null, sdk.authorizeChannel(socketId, channelName, member))
    }
  };
}

export function connected(client) {
  return new Promise((resolve, reject) => {
    if (client.connection.state === 'connected') return resolve(client.connection.socket_id);
    client.connection.bind('connected', () => resolve(client.connection.socket_id));
    setTimeout(() => reject(new Error(`pusher-js not connected: ${client.connection.state}`)), 10000);
  });
}

/** The worker a socket_id belongs to: each worker's socket_ids share their prefix. */
export function workerOf(socketId) {
  return socketId.split('.')[0];
}

/**
 * A connected client on a worker other than `socketId`'s, under --balance
 * even (./even-balance.js).
 * @param {() => PusherJs} make
 */
export function clientAwayFrom(socketId, make) {
  const open = async () => {
    const client = make();
    return { client, worker: workerOf(await connected(client)) };
  };
  return clientElsewhere(workerOf(socketId), open, (client) => client.disconnect());
}

/** Subscribes and waits for subscription_succeeded (its data: the members on presence channels). */
export function subscribed(client, name) {
  const channel = client.subscribe(name);
  return new Promise((resolve, reject) => {
    channel.bind('pusher:subscription_succeeded', (data) => resolve({ channel, data }));
    channel.bind('pusher:subscription_error', (err) => reject(new Error(`subscription_error on ${name}: ${JSON.stringify(err)}`)));
  });
}

/** A raw WebSocket on /app/<key> that records every frame it gets. */
export class RawPusher {
  static async open(gw, { key = APP.key, query = '?protocol=7&client=js&version=8.6.0', origin } = {}) {
    const raw = new RawPusher(new WebSocket(`ws://127.0.0.1:${gw.port}/app/${key}${query}`, { origin }));
    await new Promise((resolve, reject) => {
      raw.ws.once('open', resolve);
      raw.ws.once('error', reject);
    });
    return raw;
  }

  constructor(ws) {
    this.ws = ws;
    this.frames = [];
    this.closed = new Promise((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
    ws.on('message', (data) => {
      const frame = JSON.parse(data.toString());
      if (typeof frame.data === 'string') {
        try {
          frame.data = JSON.parse(frame.data);
        } catch {}
      }
      this.frames.push(frame);
    });
  }

  send(frame) {
    this.ws.send(typeof frame === 'string' ? frame : JSON.stringify(frame));
  }

  /** The first frame (past or future) matching `predicate`. */
  frame(predicate, what = 'frame') {
    return eventually(() => this.frames.find(predicate), { what: `${what}; got ${JSON.stringify(this.frames).slice(0, 600)}` });
  }

  event(event, channel) {
    return this.frame((f) => f.event === event && (channel === undefined || f.channel === channel), `${event} on ${channel}`);
  }

  async socketId() {
    return (await this.event('pusher:connection_established')).data.socket_id;
  }

  close() {
    this.ws.close();
  }
}

/** A raw connection's outcome: established, or refused with a close code. */
export async function outcome(gw, key) {
  const raw = await RawPusher.open(gw, { key });
  const result = await Promise.race([raw.event('pusher:connection_established').then(() => 'established'), raw.closed.then(({ code }) => code)]);
  raw.close();
  return result;
}

/** Pusher's channel auth for a raw client: `<key>:<hex HMAC-SHA256 of text>`. */
export function channelAuth(text, app = APP) {
  return `${app.key}:${createHmac('sha256', app.secret).update(text).digest('hex')}`;
}

/**
 * A signed HTTP API request, built by hand as Pusher's reference says (so a
 * test can spoil one part of it).
 * @returns {Promise<{status: number, body: *}>}
 */
export async function signedRequest(gw, method, path, { body, ...options } = {}) {
  const text = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
  const res = await fetch(`${gw.http}${path}?${signedQuery(method, path, { ...options, body: text })}`, {
    method,
    body: text,
    headers: text === undefined ? {} : { 'Content-Type': 'application/json' }
  });
  const answer = await res.text();
  let parsed = answer;
  try {
    parsed = JSON.parse(answer);
  } catch {}
  return { status: res.status, body: parsed };
}

/** A webhook endpoint that keeps each request the SDK's verification (with the app's key and secret) accepts, and counts the others. */
export async function pusherWebhookEndpoint(app = APP) {
  const sdk = serverSdk({ port: 1 }, app);
  const endpoint = { events: [], refused: 0 };
  endpoint.server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const webhook = sdk.webhook({ headers: req.headers, rawBody: Buffer.concat(chunks).toString() });
      if (!webhook.isValid() || !webhook.isContentTypeValid()) {
        endpoint.refused++;
        return res.writeHead(401).end();
      }
      endpoint.events.push(...webhook.getEvents());
      res.writeHead(200).end();
    });
  });
  endpoint.server.listen(0, '127.0.0.1');
  await once(endpoint.server, 'listening');
  endpoint.url = `http://127.0.0.1:${endpoint.server.address().port}/pusher`;
  return endpoint;
}

/**
 * The query string that signs a request to `path` (as sent, percent-encoding
 * included) with a body of `body` (text) or none.
 */
export function signedQuery(method, path, { body, params = {}, app = APP, timestamp = Math.floor(Date.now() / 1000), bodyMd5, signWith = app.secret } = {}) {
  const query = { auth_key: app.key, auth_timestamp: String(timestamp), auth_version: '1.0', ...params };
  if (body !== undefined) query.body_md5 = bodyMd5 ?? createHash('md5').update(body).digest('hex');
  const sorted = Object.keys(query)
    .sort()
    .map((k) => `${k}=${query[k]}`)
    .join('&');
  const signature = createHmac('sha256', signWith).update(`${method}\n${path}\n${sorted}`).digest('hex');
  return String(new URLSearchParams({ ...query, auth_signature: signature }));
}

export { eventually };
