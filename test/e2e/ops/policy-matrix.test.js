// The policy matrix: every rule of the command core through every way in,
// under every auth mode, against real gateways. One table: a rule, a way in,
// a channel, and the outcome each mode must give ('ok' or the error code).
// A way in that answers the same rule differently from another fails here.
// Afterwards each gateway's published count equals the publishes that were
// allowed: a refused command reaches no engine.
//
// Modes: --auth none, jwt and hook on the memory engine; jwt again on Redis
// for the rows whose outcome the engine gives (publish, presence, history).
// Every gateway also serves a Pusher app, whose ways in (its WebSocket and
// its HTTP API) answer as Pusher does whatever --auth says: their rows give
// Pusher's answers (a subscription_error's type and status, a pusher:error
// code, an HTTP status).
import { expect } from 'chai';
import { startGateway, eventually } from '../../../scripts/harness/gateway.js';
import { RedisServer } from '../../../scripts/harness/redis.js';
import { TestClient } from '../../helpers/client.js';
import { SseReader } from '../../helpers/sse.js';
import { Backend, json } from '../../helpers/backend.js';
import { api, configFile } from '../../helpers/api.js';
import { API_KEY } from '../../helpers/client-helpers.js';
import { SECRET, joseHs256 } from '../../helpers/tokens.js';
import { APP, RawPusher, signedRequest } from '../../helpers/pusher.js';
import { signedSubscribe, subscribeAnswer } from '../../helpers/pusher-session.js';
import { sleep } from '../../helpers/wait.js';

const CONFIG = {
  namespaces: [
    { name: 'chat', presence: true },
    { name: 'prices', clientPublish: false },
    { name: 'inbox', subscribeHook: true },
    { name: 'secret' }
  ],
  pusherApps: [{ ...APP, clientEvents: true }]
};

// What every identity may do; `secret:` is in no grant.
const GRANTS = ['chat:*', 'prices:*', 'inbox:*', 'open', '__proto__', 'constructor', 'toString'];

// The application's backend: the connect hook reads the session cookie
// (`user`, and `channels` to subscribe the connection to); the subscribe
// hook refuses any channel with `deny` in its name.
function backendAnswer(route, body, req, res) {
  if (route === 'subscribe') return json(res, body.channel.includes('deny') ? { error: { message: 'denied by the application' } } : { result: {} });
  const cookie = Object.fromEntries((body.headers.cookie ?? '').split('; ').map((pair) => pair.split('=')));
  const channels = cookie.channels === undefined ? [] : [decodeURIComponent(cookie.channels)];
  json(res, { result: { user: cookie.user, subscribe: GRANTS, publish: GRANTS, channels } });
}

const MODES = {
  none: { engine: 'memory', args: [] },
  jwt: { engine: 'memory', args: ['--auth', 'jwt', '--jwt-secret', SECRET] },
  hook: { engine: 'memory', args: ['--auth', 'hook'] },
  'jwt on redis': { engine: 'redis', args: ['--auth', 'jwt', '--jwt-secret', SECRET] }
};

// ---- The ways in: each does one command and answers 'ok' or the error code. ----

/** A WebSocket frame from an identified client (not subscribed to the channel unless the row says so). */
const ws = (type, extra = {}) => async (mode, channel) => {
  const client = await mode.client();
  try {
    const answer = await client.request({ type, channel, ...(type === 'publish' ? { data: { n: 1 } } : {}), ...extra });
    return answer.type === 'error' ? answer.code : 'ok';
  } finally {
    client.close();
  }
};

/** A presence read by a client that subscribed first. */
async function wsPresenceSubscribed(mode, channel) {
  const client = await mode.client();
  try {
    const sub = await client.subscribe(channel);
    if (sub.type === 'error') return sub.code;
    const answer = await client.request({ type: 'presence', channel });
    return answer.type === 'error' ? answer.code : 'ok';
  } finally {
    client.close();
  }
}

async function sse(mode, channel) {
  const reader = new SseReader(`${mode.gw.http}/sse?channels=${encodeURIComponent(channel)}${mode.sseCredential('sam')}`, { headers: mode.headers('sam') });
  const response = await reader.response;
  reader.req.destroy();
  return response.status === 200 ? 'ok' : response.body.error;
}

async function postPublish(mode, channel) {
  const res = await mode.gw.request('/publish', { method: 'POST', headers: { Authorization: `Bearer ${API_KEY}` }, body: JSON.stringify({ channel, data: { n: 1 } }) });
  if (res.status === 202) mode.published++;
  return res.status === 202 ? 'ok' : res.body.error;
}

/** POST /api/<method>: 'ok' with a 200 (for a broadcast, its one channel's result). */
const serverApi = (method, params) => async (mode, channel) => {
  const { status, body } = await api(mode.gw, method, params(channel));
  if (status !== 200) return body.error.code;
  const outcome = method === 'broadcast' ? (body.result.results[0].error?.code ?? 'ok') : 'ok';
  if (outcome === 'ok' && (method === 'publish' || method === 'broadcast')) mode.published++;
  return outcome;
};

/** A credential naming the channel in its `channels`: the connection is subscribed by the server, or told why not. */
async function credentialChannels(mode, channel) {
  const client = await mode.client({ channels: [channel] });
  try {
    const answer = await client.next((f) => f.type === 'subscribed' || f.type === 'error');
    return answer.type === 'error' ? answer.code : 'ok';
  } finally {
    client.close();
  }
}

/** A Pusher client's subscribe (signed where the channel needs it, unless `unsigned`): 'ok', or the subscription_error's type and status. */
const pusherSubscribe = (unsigned) => async (mode, channel) => {
  const raw = await RawPusher.open(mode.gw);
  try {
    const answer = await pusherSubscribed(raw, channel, unsigned);
    return answer.event === 'pusher:subscription_error' ? `${answer.data.type} ${answer.data.status}` : 'ok';
  } finally {
    raw.close();
  }
};

async function pusherSubscribed(raw, channel, unsigned = false) {
  const socketId = await raw.socketId();
  const signed = !unsigned && /^(private|presence)-/.test(channel);
  raw.send(signed ? signedSubscribe(socketId, channel, channel.startsWith('presence-') ? 'sam' : undefined) : { event: 'pusher:subscribe', data: { channel } });
  return subscribeAnswer(raw, channel);
}

/**
 * A client event with `data` on a channel the client subscribed to first
 * (where it may): 'ok' when a ping sent after it is answered with no
 * refusal before it, else the pusher:error's code.
 */
const pusherClientEvent = (data) => async (mode, channel) => {
  const raw = await RawPusher.open(mode.gw);
  try {
    await pusherSubscribed(raw, channel);
    raw.send(`{"event":"client-x","channel":${JSON.stringify(channel)},"data":${data}}`);
    raw.send({ event: 'pusher:ping', data: {} });
    await raw.event('pusher:pong');
    const error = raw.frames.find((f) => f.event === 'pusher:error');
    if (error === undefined) mode.published++;
    return error === undefined ? 'ok' : String(error.data.code);
  } finally {
    raw.close();
  }
};

/** A signed HTTP API request: 'ok' (200), or the status. */
const pusherApi = (method, path, body) => async (mode, channel) => {
  const res = await signedRequest(mode.gw, method, `/apps/${APP.appId}${path(encodeURIComponent(channel))}`, { body: body?.(channel) });
  if (res.status === 200 && method === 'POST') mode.published++;
  return res.status === 200 ? 'ok' : String(res.status);
};

const pusherEvent = (data) => pusherApi('POST', () => '/events', (channel) => ({ name: 'e', channel, data }));
const DEEP = `${'['.repeat(70)}${']'.repeat(70)}`;
const LARGE = JSON.stringify('x'.repeat(11000));

const WAYS = {
  'ws subscribe': ws('subscribe'),
  'ws publish': ws('publish'),
  'ws presence': ws('presence'),
  'ws presence_stats': ws('presence_stats'),
  'ws presence, subscribed': wsPresenceSubscribed,
  'ws unsubscribe': ws('unsubscribe'),
  sse,
  'POST /publish': postPublish,
  'api publish': serverApi('publish', (channel) => ({ channel, data: { n: 1 } })),
  'api broadcast': serverApi('broadcast', (channel) => ({ channels: [channel], data: 1 })),
  'api presence': serverApi('presence', (channel) => ({ channel })),
  'api history': serverApi('history', (channel) => ({ channel })),
  'api subscribe': serverApi('subscribe', (channel) => ({ user: 'sam', channel })),
  'credential channels': credentialChannels,
  'pusher subscribe': pusherSubscribe(false),
  'pusher subscribe, unsigned': pusherSubscribe(true),
  'pusher client event': pusherClientEvent('{"n":1}'),
  'pusher client event, data 70 deep': pusherClientEvent(DEEP),
  'pusher client event, data over 10 KB': pusherClientEvent(LARGE),
  'pusher api events': pusherEvent('{"n":1}'),
  'pusher api events, data over 10 KB': pusherEvent(LARGE),
  'pusher api channel': pusherApi('GET', (name) => `/channels/${name}`),
  'pusher api users': pusherApi('GET', (name) => `/channels/${name}/users`)
};

// ---- The matrix: [rule, way, channel, outcome for every mode | {mode: outcome}] ----
const ALL_WAYS_UNKNOWN = ['ws subscribe', 'ws publish', 'ws presence', 'ws presence_stats', 'ws unsubscribe', 'sse', 'POST /publish', 'api publish', 'api presence', 'api history', 'api subscribe'];
const AUTH_ONLY = (outcome, none) => ({ none, jwt: outcome, hook: outcome, 'jwt on redis': outcome });
const NO_USERS = (outcome) => AUTH_ONLY(outcome, 'bad_request'); // the server API reaches users only where there are some

const ROWS = [
  ...ALL_WAYS_UNKNOWN.map((way) => ['unknown namespace', way, 'nons:1', way === 'api subscribe' ? NO_USERS('invalid_channel') : 'invalid_channel']),
  ['unknown namespace', 'credential channels', 'nons:1', AUTH_ONLY('invalid_channel')],
  ['an invalid name', 'ws subscribe', 'bad channel!', 'invalid_channel'],
  ['an invalid name', 'sse', 'bad channel!', 'invalid_channel'],
  ['an invalid name', 'POST /publish', 'bad channel!', 'invalid_channel'],
  ['an invalid name', 'api publish', 'bad channel!', 'invalid_channel'],
  ...['__proto__:1', 'constructor:1', 'toString:1', 'hasOwnProperty:x'].flatMap((channel) =>
    ['ws subscribe', 'ws publish', 'sse', 'POST /publish', 'api publish', 'api history'].map((way) => ['a namespace named after an Object.prototype key', way, channel, 'invalid_channel'])
  ),
  ...['__proto__', 'constructor', 'toString'].flatMap((channel) =>
    ['ws subscribe', 'ws publish', 'sse', 'POST /publish', 'api publish', 'api history'].map((way) => ['a channel named after an Object.prototype key', way, channel, 'ok'])
  ),
  ['a channel named after an Object.prototype key', 'credential channels', '__proto__', AUTH_ONLY('ok')],
  ...['ws subscribe', 'ws publish', 'sse'].map((way) => ['forbidden channel', way, 'secret:1', AUTH_ONLY('forbidden', 'ok')]),
  ...['POST /publish', 'api publish', 'api broadcast', 'api history'].map((way) => ['forbidden channel (the server is trusted)', way, 'secret:1', 'ok']),
  ['forbidden channel (the server is trusted)', 'credential channels', 'secret:1', AUTH_ONLY('ok')],
  ['forbidden channel (the server is trusted)', 'api subscribe', 'secret:1', NO_USERS('ok')],
  ...['ws subscribe', 'sse'].map((way) => ['subscribe hook refusal', way, 'inbox:deny', 'forbidden']),
  ...['ws subscribe', 'sse'].map((way) => ['subscribe hook allows', way, 'inbox:ok', 'ok']),
  ['subscribe hook refusal (the server is trusted)', 'api subscribe', 'inbox:deny', NO_USERS('ok')],
  ['clientPublish false', 'ws publish', 'prices:1', 'forbidden'],
  ...['POST /publish', 'api publish', 'api broadcast'].map((way) => ['clientPublish false (the server publishes)', way, 'prices:1', 'ok']),
  ['presence of a channel not subscribed', 'ws presence', 'chat:1', 'forbidden'],
  ['presence of a channel not subscribed', 'ws presence_stats', 'chat:1', 'forbidden'],
  ['presence of a channel subscribed', 'ws presence, subscribed', 'chat:1', 'ok'],
  ['presence of any channel (the server reads any)', 'api presence', 'chat:1', 'ok'],
  ['presence outside a presence namespace', 'ws presence, subscribed', 'open', 'bad_request'],
  ['presence outside a presence namespace', 'api presence', 'open', 'bad_request'],
  // Pusher's ways in: its channel names, its signatures, its limits.
  ...['pusher subscribe', 'pusher client event', 'pusher api events', 'pusher api channel'].map((way) => [
    'an invalid name',
    way,
    'bad channel!',
    { 'pusher subscribe': 'InvalidChannel 400', 'pusher client event': '4301', 'pusher api events': '400', 'pusher api channel': '400' }[way]
  ]),
  ...['__proto__', 'constructor', 'toString', 'private-__proto__', 'presence-constructor'].flatMap((channel) =>
    ['pusher subscribe', 'pusher api events', 'pusher api channel'].map((way) => ['a channel named after an Object.prototype key', way, channel, 'ok'])
  ),
  ['a channel named after an Object.prototype key', 'pusher api users', 'presence-constructor', 'ok'],
  ['a channel named after an Object.prototype key', 'pusher client event', 'private-__proto__', 'ok'],
  ['a private channel without its signature', 'pusher subscribe, unsigned', 'private-x', 'AuthError 401'],
  ['a presence channel without its signature', 'pusher subscribe, unsigned', 'presence-x', 'AuthError 401'],
  ['a signed channel', 'pusher subscribe', 'private-x', 'ok'],
  ['a signed presence channel', 'pusher subscribe', 'presence-x', 'ok'],
  ['client events on a public channel', 'pusher client event', 'open', '4301'],
  ['client events where a signature allows them', 'pusher client event', 'presence-x', 'ok'],
  ['data nested deeper than 64 levels', 'pusher client event, data 70 deep', 'private-x', 'null'],
  ['data over 10 KB', 'pusher client event, data over 10 KB', 'private-x', '4301'],
  ['data over 10 KB', 'pusher api events, data over 10 KB', 'x', '413'],
  ['the server publishes anywhere in its app', 'pusher api events', 'private-x', 'ok'],
  ['users of a channel without presence', 'pusher api users', 'open', '400']
];

// Users and server API methods named after Object.prototype keys.
const NAMES = ['__proto__', 'constructor', 'toString', 'hasOwnProperty'];

describe('the policy matrix: every rule, every way in, every auth mode', function () {
  this.timeout(60000);
  let redis;
  let backend;
  const modes = {};

  before(async () => {
    backend = await Backend.start(backendAnswer);
    redis = await RedisServer.start();
    const config = configFile(CONFIG);
    await Promise.all(
      Object.entries(MODES).map(async ([name, { engine, args }]) => {
        const engineArgs = engine === 'redis' ? ['--engine', 'redis', '--redis-url', redis.url] : [];
        const hooks = ['--subscribe-hook', `${backend.url}/subscribe`, ...(args.includes('hook') ? ['--connect-hook', `${backend.url}/connect`] : [])];
        const gw = await startGateway(['--workers', '1', '--config', config, '--api-key', API_KEY, ...hooks, ...engineArgs, ...args]);
        modes[name] = await identities(gw, args);
      })
    );
  });

  after(async () => {
    await Promise.all(Object.values(modes).map((mode) => mode.gw.stop()));
    await backend?.stop();
    await redis?.stop();
  });

  for (const [rule, way, channel, outcome] of ROWS) {
    for (const modeName of Object.keys(MODES)) {
      const expected = typeof outcome === 'string' ? outcome : outcome[modeName];
      if (expected === undefined) continue;
      it(`${rule}: ${way} ${JSON.stringify(channel)} under ${modeName} -> ${expected}`, async () => {
        expect(await WAYS[way](modes[modeName], channel)).to.equal(expected);
      });
    }
  }

  for (const modeName of Object.keys(MODES)) {
    it(`server API methods and users named after Object.prototype keys under ${modeName}`, async () => {
      const mode = modes[modeName];
      for (const name of NAMES) {
        const unknown = await api(mode.gw, name, {});
        expect([unknown.status, unknown.body.error.code], `method ${name}`).to.deep.equal([404, 'not_found']);
        const disconnect = await api(mode.gw, 'disconnect', { user: name });
        if (modeName === 'none') expect(disconnect.body.error.code).to.equal('bad_request');
        else expect(disconnect.body, `user ${name}`).to.deep.equal({ result: { disconnected: 0 } });
      }
    });

    it(`under ${modeName}, the engine published exactly what was allowed`, async () => {
      const mode = modes[modeName];
      // The metric reaches the primary within a second; the count must settle at the allowed publishes, not above.
      await eventually(async () => (await mode.gw.metric('gateway_messages_published_total')) === mode.published, { what: `${mode.published} publishes` });
      await sleep(1500);
      expect(await mode.gw.metric('gateway_messages_published_total')).to.equal(mode.published);
    });
  }
});

/**
 * How a mode's clients are identified: nothing (none), a token (jwt) or a
 * session cookie the connect hook reads (hook); each with every grant but
 * `secret:`, and `channels` where a row asks for them.
 */
async function identities(gw, args) {
  const auth = args.includes('jwt') ? 'jwt' : args.includes('hook') ? 'hook' : 'none';
  const token = (user, channels) => joseHs256({ sub: user, subscribe: GRANTS, publish: GRANTS, ...(channels ? { channels } : {}) });
  const mode = {
    gw,
    published: 0,
    headers: (user, channels) => (auth === 'hook' ? { cookie: `user=${user}${channels ? `; channels=${encodeURIComponent(channels[0])}` : ''}` } : {}),
    sseCredential: () => '',
    async client({ channels } = {}) {
      const client = await TestClient.connect(gw.url, { headers: mode.headers('sam', channels) });
      if (auth === 'jwt') {
        const answer = await client.request({ type: 'auth', token: await token('sam', channels) });
        expect(answer.type, JSON.stringify(answer)).to.equal('ack');
      }
      // A published message counts once its ack says stored.
      const request = client.request.bind(client);
      client.request = async (frame) => {
        const answer = await request(frame);
        if (frame.type === 'publish' && answer.type === 'ack') mode.published++;
        return answer;
      };
      return client;
    }
  };
  if (auth === 'jwt') {
    const sseToken = await token('sam');
    mode.sseCredential = () => `&token=${sseToken}`;
  }
  return mode;
}
