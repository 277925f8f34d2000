// The hooks against a real backend (node:http, ./helpers/backend.js): a
// session cookie authenticates WebSockets and SSE streams through the
// connect hook, the answer's channels and patterns apply as a JWT's would,
// namespaces ask the subscribe and publish hooks, the refresh hook extends or
// ends, and every way a backend can fail or answer badly ends in a clear
// close (1013) or status (503), counted, with no worker lost.
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import WebSocket from 'ws';
import { startGateway, eventually, freePort } from '../../../scripts/harness/gateway.js';
import { connect as connectClient, State } from '../../../lib/client/index.js';
import { TestClient } from '../../helpers/client.js';
import { SseReader } from '../../helpers/sse.js';
import { Backend, json } from '../../helpers/backend.js';
import { sleep } from '../../helpers/wait.js';

const HOOK_TIMEOUT = 300;
const API_KEY = 'hooks-test-key';
const NAMESPACES = [{ name: 'user' }, { name: 'chat' }, { name: 'sub', subscribeHook: true }, { name: 'pub', publishHook: true }];

const ALL = { subscribe: ['*'], publish: ['*'] };
const BIG = 10 * 1024 * 1024;

// The connect hook's answer for each session cookie.
const SESSIONS = {
  alice: () => ({ result: { user: 'alice', ...ALL, channels: ['user:alice'], info: { name: 'Alice' } } }),
  own: () => ({ result: { user: 'own', subscribe: ['chat:{sub}'] } }),
  banned: () => ({ error: { code: 4009, message: 'banned' } }),
  expiring: () => ({ result: { user: 'expiring', ...ALL, expireAt: Date.now() / 1000 + 4 } }),
  brief: () => ({ result: { user: 'brief', ...ALL, expireAt: Date.now() / 1000 + 2 } }),
  // bad answers
  user42: () => ({ result: { user: 42 } }),
  neither: () => ({ ok: true }),
  bigInfo: () => ({ result: { user: 'b', info: { text: 'x'.repeat(1100) } } }),
  patterns: () => ({ result: { user: 'p', subscribe: 'chat:*' } }),
  code: () => ({ error: { code: 1000, message: 'not an application code' } })
};

function cookieUser(body) {
  return /session=([^;]+)/.exec(body.headers.cookie ?? '')?.[1];
}

/** The default backend: sessions above; special sessions misbehave in the ways the issue lists. */
function answer(route, body, req, res) {
  if (route === 'connect') {
    const session = cookieUser(body);
    switch (session) {
      case 'down':
        return json(res, { error: 'oops' }, 500);
      case 'notfound':
        return json(res, {}, 404);
      case 'garbage':
        return res.end('{"result": nope');
      case 'huge':
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"result":{"user":"h","info":"');
        return res.end('x'.repeat(BIG));
      case 'redirect':
        return res.writeHead(302, { location: '/connect-elsewhere' }).end();
      case 'hang':
        return undefined;
      case 'reset':
        return req.socket.destroy();
      case 'late':
        return setTimeout(() => json(res, SESSIONS.alice()), HOOK_TIMEOUT * 2);
      default:
        return json(res, SESSIONS[session]?.() ?? { error: { message: 'log in first' } });
    }
  }
  if (route === 'subscribe') {
    if (body.channel === 'sub:no') return json(res, { error: { message: 'not yours' } });
    if (body.channel === 'sub:fail') return json(res, {}, 503);
    return json(res, { result: {} });
  }
  if (route === 'publish') {
    if (body.channel === 'pub:no') return json(res, { error: { message: 'no swearing' } });
    if (body.channel === 'pub:rewrite') return json(res, { result: { data: { text: body.data.text.toUpperCase(), by: body.user } } });
    return json(res, { result: {} });
  }
  if (route === 'refresh') {
    if (body.user === 'brief') return json(res, { result: { expired: true } });
    const n = backend.routed('refresh').filter((r) => r.body.user === body.user).length;
    return json(res, n === 1 ? { result: { expireAt: Date.now() / 1000 + 4 } } : { result: { expired: true } });
  }
  return json(res, {}, 404);
}

let backend;

function connect(gw, session, headers = {}) {
  return new TestClient(new WebSocket(gw.url, { headers: { ...(session && { cookie: `theme=dark; session=${session}` }), ...headers } }));
}

async function welcomed(gw, session) {
  const client = connect(gw, session, { origin: 'https://app.example' });
  client.welcome = await client.next((f) => f.type === 'welcome');
  return client;
}

describe('hooks', function () {
  this.timeout(60000);
  let gw;
  let dir;

  before(async () => {
    backend = await Backend.start(answer);
    dir = mkdtempSync(join(tmpdir(), 'hooks-'));
    writeFileSync(join(dir, 'gateway.json'), JSON.stringify({ namespaces: NAMESPACES }));
    gw = await startGateway([
      '--config', join(dir, 'gateway.json'),
      '--auth', 'hook',
      '--connect-hook', `${backend.url}/connect`,
      '--subscribe-hook', `${backend.url}/subscribe`,
      '--publish-hook', `${backend.url}/publish`,
      '--refresh-hook', `${backend.url}/refresh`,
      '--hook-timeout', String(HOOK_TIMEOUT),
      '--api-key', API_KEY,
      '--workers', '1'
    ]);
  });
  after(async () => {
    await gw?.stop();
    await backend?.stop();
  });

  it("admits a WebSocket by its session cookie: the hook's user, channels and patterns apply, the welcome follows", async () => {
    const client = await welcomed(gw, 'alice');
    expect(client.welcome.auth).to.equal('hook');
    const asked = backend.routed('connect').findLast((r) => r.body.client === client.welcome.connectionId);
    expect(asked.body).to.deep.include({ transport: 'ws', ip: '127.0.0.1' });
    expect(asked.body.headers).to.deep.equal({ cookie: 'theme=dark; session=alice', origin: 'https://app.example' });
    // The server subscribed it to the hook's channels.
    await client.next((f) => f.type === 'subscribed' && f.channel === 'user:alice');
    expect((await client.subscribe('chat:x')).type).to.equal('ack');
    // No auth frame under --auth hook.
    expect((await client.request({ type: 'auth', token: 'a.b.c' })).code).to.equal('bad_request');
    client.close();

    // Patterns from the hook, with {sub}: only the user's own channel.
    const own = await welcomed(gw, 'own');
    expect((await own.subscribe('chat:own')).type).to.equal('ack');
    expect((await own.subscribe('chat:alice')).code).to.equal('forbidden');
    expect((await own.publish('chat:own', 1)).code).to.equal('forbidden');
    own.close();
  });

  it('knows hook-admitted users as it knows token users: POST /disconnect closes theirs with 4004', async () => {
    const [mine, other] = [await welcomed(gw, 'alice'), await welcomed(gw, 'own')];
    const res = await gw.request('/disconnect', {
      method: 'POST',
      headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ user: 'alice' })
    });
    expect(res.body.disconnected).to.be.at.least(1);
    expect((await mine.closed).code).to.equal(4004);
    expect((await other.request({ type: 'ping' })).type).to.equal('pong');
    other.close();
  });

  it("closes with the application's refusal code, 4001 by default", async () => {
    expect(await connect(gw, 'banned').closed).to.deep.equal({ code: 4009, reason: 'banned' });
    expect(await connect(gw, undefined).closed).to.deep.equal({ code: 4001, reason: 'log in first' });
    expect(await gw.metric('gateway_hook_requests_total', '{hook="connect",result="refused"}')).to.be.at.least(2);
  });

  it('opens an SSE stream by its cookie; a refusal is 403, a failing backend 503 with Retry-After', async () => {
    const stream = await SseReader.open(`${gw.http}/sse?channels=chat:s`, { headers: { cookie: 'session=alice', origin: 'https://app.example' } });
    // The hook admitted this Origin: an EventSource with credentials may read the stream.
    expect((await stream.response).headers).to.deep.include({ 'access-control-allow-origin': 'https://app.example', 'access-control-allow-credentials': 'true' });
    expect(backend.routed('connect').findLast((r) => r.body.transport === 'sse').body.headers.cookie).to.equal('session=alice');
    const publisher = await welcomed(gw, 'alice');
    await publisher.publish('chat:s', { n: 1 });
    await eventually(() => stream.messages('chat:s').length === 1, { what: 'the message on the stream' });
    await stream.close();
    publisher.close();

    const banned = await new SseReader(`${gw.http}/sse?channels=chat:s`, { headers: { cookie: 'session=banned' } }).response;
    expect(banned.status).to.equal(403);
    const down = await new SseReader(`${gw.http}/sse?channels=chat:s`, { headers: { cookie: 'session=down' } }).response;
    expect(down.status).to.equal(503);
    expect(Number(down.headers['retry-after'])).to.be.within(1, 5);
    // The hook's patterns hold for a stream too.
    const notOwn = await new SseReader(`${gw.http}/sse?channels=chat:alice`, { headers: { cookie: 'session=own' } }).response;
    expect(notOwn.status).to.equal(403);
  });

  it('asks the subscribe hook in a subscribeHook namespace, for WebSockets and streams', async () => {
    const client = await welcomed(gw, 'alice');
    const before = backend.routed('subscribe').length;
    expect((await client.subscribe('chat:free')).type).to.equal('ack'); // no hook in chat
    expect(backend.routed('subscribe').length).to.equal(before);
    expect((await client.subscribe('sub:ok')).type).to.equal('ack');
    expect(backend.routed('subscribe').at(-1).body).to.deep.equal({ client: client.welcome.connectionId, user: 'alice', channel: 'sub:ok' });
    const no = await client.subscribe('sub:no');
    expect(no.code).to.equal('forbidden');
    expect(no.message).to.include('not yours');
    expect((await client.subscribe('sub:fail')).code).to.equal('unavailable');
    client.close();

    const ok = await SseReader.open(`${gw.http}/sse?channels=sub:ok,chat:a`, { headers: { cookie: 'session=alice' } });
    await ok.close();
    const no2 = await new SseReader(`${gw.http}/sse?channels=sub:ok,sub:no`, { headers: { cookie: 'session=alice' } }).response;
    expect(no2.status).to.equal(403);
  });

  it('asks the publish hook in a publishHook namespace: published as sent, replaced, or refused', async () => {
    const [publisher, reader] = [await welcomed(gw, 'alice'), await welcomed(gw, 'alice')];
    await reader.subscribe('pub:asis');
    await reader.subscribe('pub:rewrite');
    expect((await publisher.publish('pub:asis', { text: 'hi' })).type).to.equal('ack');
    expect(backend.routed('publish').at(-1).body).to.deep.equal({ client: publisher.welcome.connectionId, user: 'alice', channel: 'pub:asis', data: { text: 'hi' } });
    expect((await publisher.publish('pub:rewrite', { text: 'hi' })).type).to.equal('ack');
    expect((await publisher.publish('pub:no', { text: 'hi' })).code).to.equal('forbidden');
    await eventually(() => reader.messages('pub:rewrite').length === 1, { what: 'the replaced message' });
    expect(reader.messages('pub:asis').map((m) => m.data)).to.deep.equal([{ text: 'hi' }]);
    expect(reader.messages('pub:rewrite').map((m) => m.data)).to.deep.equal([{ text: 'HI', by: 'alice' }]);
    publisher.close();
    reader.close();
  });

  it('refreshes ahead of expireAt, then closes with 4003 when the application says expired', async () => {
    const started = Date.now();
    const client = await welcomed(gw, 'expiring');
    const closed = await client.closed;
    expect(closed.code).to.equal(4003);
    const refreshes = backend.routed('refresh').filter((r) => r.body.user === 'expiring');
    expect(refreshes.map((r) => r.body)).to.deep.equal([
      { client: client.welcome.connectionId, user: 'expiring' },
      { client: client.welcome.connectionId, user: 'expiring' }
    ]);
    // The first refresh extended it past its first expireAt (4 s).
    expect(Date.now() - started).to.be.above(4000);
  });

  it('refreshes a stream too: the stream ends when the application says expired', async () => {
    const stream = await SseReader.open(`${gw.http}/sse?channels=chat:r`, { headers: { cookie: 'session=brief' } });
    const client = backend.routed('connect').findLast((r) => r.body.transport === 'sse').body.client;
    await stream.closed;
    expect(backend.routed('refresh').filter((r) => r.body.client === client).map((r) => r.body)).to.deep.equal([{ client, user: 'brief' }]);
  });

  it('the browser client comes back after a 4003 under --auth hook: the connect hook decides again', async () => {
    class CookieWebSocket extends WebSocket {
      constructor(address) {
        super(address, { headers: { cookie: 'session=brief' } });
      }
    }
    const client = connectClient(gw.url, { WebSocket: CookieWebSocket, transport: 'websocket', backoffBase: 50, backoffCap: 400 });
    const states = [];
    client.on('state', (state, info) => states.push([state, info?.code]));
    try {
      await eventually(() => states.filter(([s]) => s === State.OPEN).length === 2, { what: 'open again after the expiry', timeout: 15000 });
      expect(states.some(([s, code]) => s === State.RECONNECTING && code === 4003)).to.equal(true);
      expect(client.welcome.auth).to.equal('hook');
    } finally {
      client.close();
    }
  });

  describe('bad answers and faults', () => {
    const CASES = [
      ['down', 'server_error'],
      ['notfound', 'invalid'],
      ['garbage', 'invalid'],
      ['neither', 'invalid'],
      ['user42', 'invalid'],
      ['bigInfo', 'invalid'],
      ['patterns', 'invalid'],
      ['code', 'invalid'],
      ['huge', 'too_large'],
      ['redirect', 'redirect'],
      ['reset', 'unreachable'],
      ['hang', 'timeout'],
      ['late', 'timeout']
    ];
    for (const [session, result] of CASES) {
      it(`${session}: closed with 1013 within the hook timeout, counted as ${result}`, async () => {
        const counted = (await gw.metric('gateway_hook_requests_total', `{hook="connect",result="${result}"}`)) ?? 0;
        const started = Date.now();
        const client = connect(gw, session);
        expect((await client.closed).code).to.equal(1013);
        expect(Date.now() - started).to.be.below(HOOK_TIMEOUT + 700);
        expect(client.frames.some((f) => f.type === 'welcome')).to.equal(false);
        await eventually(async () => (await gw.metric('gateway_hook_requests_total', `{hook="connect",result="${result}"}`)) === counted + 1, {
          what: `${result} counted`
        });
      });
    }

    it('loses no worker, and serves the next client (the late answer was ignored)', async () => {
      await sleep(HOOK_TIMEOUT * 2); // the late answers have arrived by now
      expect(gw.logs.filter((l) => l.msg === 'worker ready')).to.have.length(1);
      const client = await welcomed(gw, 'alice');
      client.close();
    });

    it('--max-conns-per-user counts hook users: one more is closed with 1008', async () => {
      const capped = await startGateway(['--auth', 'hook', '--connect-hook', `${backend.url}/connect`, '--max-conns-per-user', '1', '--workers', '1']);
      try {
        const first = connect(capped, 'alice');
        await first.next((f) => f.type === 'welcome');
        expect((await connect(capped, 'alice').closed).code).to.equal(1008);
        // Counted by the primary, which stays up: the first is still served.
        expect((await first.request({ type: 'ping' })).type).to.equal('pong');
        first.close();
      } finally {
        await capped.stop();
      }
    });

    it('an unreachable backend: 1013, and 503 for a stream', async () => {
      const port = await freePort();
      const nowhere = await startGateway(['--auth', 'hook', '--connect-hook', `http://127.0.0.1:${port}/connect`, '--workers', '1']);
      try {
        expect((await connect(nowhere, 'alice').closed).code).to.equal(1013);
        expect((await new SseReader(`${nowhere.http}/sse?channels=a`, { headers: { cookie: 'session=alice' } }).response).status).to.equal(503);
        expect(await nowhere.metric('gateway_hook_requests_total', '{hook="connect",result="unreachable"}')).to.equal(2);
      } finally {
        await nowhere.stop();
      }
    });
  });
});
