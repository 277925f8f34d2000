// Server-Sent Events against the real gateway: the stream's format, the
// cursor and recovery through Last-Event-ID, ordering shared with WebSocket
// subscribers across workers, keepalive, limits, bad input, drain and auth.
// Raw HTTP (test/helpers/sse.js) where the bytes matter; the `eventsource`
// package where a real EventSource's behaviour does.
import http from 'node:http';
import net from 'node:net';
import { expect } from 'chai';
import { EventSource } from 'eventsource';
import WebSocket from 'ws';
import { connect, State, ErrorCode } from '../../../lib/client/index.js';
import { startGateway, eventually } from '../../../scripts/harness/gateway.js';
import { TestClient } from '../../helpers/client.js';
import { API_KEY, httpPublish } from '../../helpers/client-helpers.js';
import { SseReader } from '../../helpers/sse.js';
import { SECRET, joseHs256, nowS } from '../../helpers/tokens.js';

const range = (from, to) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const seqs = (reader, channel) => reader.messages(channel).map((m) => m.seq);

/** One raw request; resolves with everything the gateway wrote until it closed or `ms` passed. */
function rawRequest(port, text, ms = 1500) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(text));
    let got = '';
    socket.on('data', (d) => (got += d));
    socket.on('error', () => {});
    const done = () => resolve(got);
    socket.on('close', done);
    setTimeout(() => {
      socket.destroy();
      done();
    }, ms);
  });
}

describe('SSE: stream, cursor, recovery', function () {
  let gw;
  let open = [];
  const stream = async (query, options) => {
    const reader = await SseReader.open(`${gw.http}/sse?${query}`, options);
    open.push(reader);
    return reader;
  };

  before(async () => {
    gw = await startGateway(['--api-key', API_KEY, '--max-publish-rate', '100000', '--ping-interval', '300', '--max-subscriptions', '5']);
  });
  afterEach(async () => {
    await Promise.all(open.map((r) => r.close()));
    open = [];
  });
  after(() => gw.stop());

  it('answers text/event-stream, unbuffered, with retry:, a cursor, then one event per message', async () => {
    const reader = await stream('channels=fmt,other');
    const { headers } = await reader.response;
    expect(headers['content-type']).to.equal('text/event-stream; charset=utf-8');
    expect(headers['cache-control']).to.match(/^no-cache/);
    expect(headers['x-accel-buffering']).to.equal('no');
    expect(headers['content-encoding']).to.equal(undefined);
    await eventually(() => reader.events.length >= 2, { what: 'retry and cursor' });
    expect(reader.events[0]).to.deep.equal({ retry: '2000' });
    // The subscribes answered: `ready` gives the client its cursor before any message.
    expect(reader.events[1]).to.include({ event: 'ready' });
    expect(JSON.parse(reader.events[1].data)).to.have.all.keys('connectionId'); // the stream's id in presence and join/leave
    expect(reader.events[1].id).to.match(/^0\.[0-9a-z]+,0\.[0-9a-z]+$/);
    const [epochFmt, epochOther] = reader.events[1].id.split(',').map((e) => e.split('.')[1]);

    await httpPublish(gw, 'fmt', { hello: 'world' });
    await httpPublish(gw, 'other', 'x');
    await eventually(() => reader.messages().length === 2, { what: 'two messages' });
    expect(reader.events.slice(2)).to.deep.equal([
      { id: `1.${epochFmt},0.${epochOther}`, data: '{"channel":"fmt","seq":1,"data":{"hello":"world"}}' },
      { id: `1.${epochFmt},1.${epochOther}`, data: '{"channel":"other","seq":1,"data":"x"}' }
    ]);
    expect(await gw.metric('gateway_connections', '{transport="sse",protocol="native"}')).to.equal(1);
  });

  it('sends a `: ping` comment every --ping-interval', async () => {
    const reader = await stream('channels=quiet');
    await eventually(() => reader.comments >= 3, { what: 'three pings' });
  });

  it('delivers to an `eventsource` EventSource, whose lastEventId follows the cursor', async () => {
    const es = new EventSource(`${gw.http}/sse?channels=es`);
    const got = [];
    es.onmessage = (e) => got.push({ id: e.lastEventId, data: JSON.parse(e.data) });
    try {
      await new Promise((resolve, reject) => {
        es.onopen = resolve;
        es.onerror = reject;
      });
      await eventually(async () => (await gw.metric('gateway_subscriptions')) >= 1, { what: 'subscribed' });
      for (let i = 1; i <= 3; i++) await httpPublish(gw, 'es', { i });
      await eventually(() => got.length === 3, { what: 'three events' });
      expect(got.map((e) => e.data)).to.deep.equal(range(1, 3).map((i) => ({ channel: 'es', seq: i, data: { i } })));
      expect(got[2].id).to.match(/^3\.[0-9a-z]+$/);
    } finally {
      es.close();
    }
  });

  it('recovers exactly what was missed with Last-Event-ID, then goes live', async () => {
    const first = await stream('channels=ra,rb');
    for (let i = 1; i <= 3; i++) await httpPublish(gw, 'ra', { i });
    await httpPublish(gw, 'rb', { i: 1 });
    await eventually(() => first.messages().length === 4, { what: 'first four' });
    const cursor = first.lastEventId;
    await first.close();
    for (let i = 4; i <= 8; i++) await httpPublish(gw, 'ra', { i });
    for (let i = 2; i <= 3; i++) await httpPublish(gw, 'rb', { i });

    // From another address: under --balance ip, perhaps another worker.
    const again = await stream('channels=ra,rb', { headers: { 'Last-Event-ID': cursor }, localAddress: '127.0.0.7' });
    await eventually(() => again.messages().length === 7, { what: 'seven replayed' });
    expect(seqs(again, 'ra')).to.deep.equal(range(4, 8));
    expect(seqs(again, 'rb')).to.deep.equal(range(2, 3));
    await httpPublish(gw, 'ra', { i: 9 });
    await eventually(() => again.messages().length === 8, { what: 'live after replay' });
    expect(seqs(again, 'ra')).to.deep.equal(range(4, 9));
    expect(again.lastEventId.split(',').map((e) => Number(e.split('.')[0]))).to.deep.equal([9, 3]);
    expect(again.events.some((e) => e.event === 'gap')).to.equal(false);
    expect(again.events.filter((e) => e.event === 'ready')).to.have.length(1);
  });

  it('takes the cursor as the lastEventId query parameter too', async () => {
    const first = await stream('channels=rq');
    await httpPublish(gw, 'rq', 1);
    await eventually(() => first.messages().length === 1, { what: 'one' });
    const cursor = first.lastEventId;
    await first.close();
    await httpPublish(gw, 'rq', 2);
    const again = await stream(`channels=rq&lastEventId=${encodeURIComponent(cursor)}`);
    await eventually(() => again.messages().length === 1, { what: 'the missed one' });
    expect(again.messages()[0]).to.deep.equal({ channel: 'rq', seq: 2, data: 2 });
  });

  it('sends `event: gap` for a channel it cannot recover, and recovers the others', async () => {
    const first = await stream('channels=ga,gb');
    await httpPublish(gw, 'gb', 1);
    await eventually(() => first.messages().length === 1, { what: 'one' });
    const [, gb] = first.lastEventId.split(',');
    await first.close();
    await httpPublish(gw, 'gb', 2);
    const again = await stream('channels=ga,gb', { headers: { 'Last-Event-ID': `5.zzzz,${gb}` } });
    await eventually(() => again.events.some((e) => e.event === 'gap') && again.messages().length === 1, { what: 'gap and replay' });
    const gap = again.events.find((e) => e.event === 'gap');
    expect(JSON.parse(gap.data)).to.deep.equal({ channel: 'ga' });
    expect(gap.id.split(',')[0]).to.match(/^0\./); // where ga stands now
    expect(again.messages()).to.deep.equal([{ channel: 'gb', seq: 2, data: 2 }]);
  });

  it('orders a channel the same for WebSocket and SSE subscribers on every worker', async () => {
    const addresses = ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5'];
    const readers = await Promise.all(addresses.map((localAddress) => stream('channels=mixed', { localAddress })));
    const sockets = await Promise.all(addresses.map((localAddress) => TestClient.connect(gw.url, { localAddress })));
    await Promise.all(sockets.map((c) => c.subscribe('mixed')));
    expect(new Set(sockets.map((c) => c.welcome.worker)).size).to.equal(2);
    await eventually(() => readers.every((r) => r.lastEventId !== undefined), { what: 'streams subscribed' });
    // Publishers on both workers at once, interleaving.
    const per = 50;
    sockets.forEach((c, k) => {
      for (let i = 0; i < per; i++) c.send({ type: 'publish', channel: 'mixed', data: { k, i } });
    });
    const total = per * sockets.length;
    await eventually(() => readers.every((r) => r.messages().length === total), { what: 'all events' });
    await Promise.all(sockets.map((c) => c.next(() => c.messages('mixed').length === total)));
    const order = sockets[0].messages('mixed').map((m) => JSON.stringify([m.seq, m.data]));
    expect(order.map((o) => JSON.parse(o)[0])).to.deep.equal(range(1, total));
    for (const c of sockets) expect(c.messages('mixed').map((m) => JSON.stringify([m.seq, m.data]))).to.deep.equal(order);
    for (const r of readers) expect(r.messages().map((m) => JSON.stringify([m.seq, m.data]))).to.deep.equal(order);
    for (const c of sockets) c.close();
  });

  describe('bad input gets a clear 400 or a close, and nothing else is affected', function () {
    let witness;
    before(async () => {
      witness = await SseReader.open(`${gw.http}/sse?channels=witness`);
    });
    after(async () => {
      await httpPublish(gw, 'witness', 'still here');
      await eventually(() => witness.messages().length === 1, { what: 'the witness stream still works' });
      await witness.close();
    });

    const cases = [
      ['no channels', 'x=1', 'bad_request'],
      ['more channels than --max-subscriptions', `channels=${range(1, 6).map((i) => `c${i}`).join(',')}`, 'too_many_subscriptions'],
      ['a repeated channel', 'channels=a,b,a', 'bad_request'],
      ['an invalid name', 'channels=ok,not%20ok', 'invalid_channel'],
      ['an empty name', 'channels=a,,b', 'invalid_channel'],
      ['a garbage Last-Event-ID', 'channels=a&lastEventId=%00garbage', 'bad_request'],
      ['a cursor for other channels (wrong count)', 'channels=a&lastEventId=1.ab,2.cd', 'bad_request'],
      ['a cursor with a seq past safe integers', 'channels=a&lastEventId=99999999999999999.ab', 'bad_request']
    ];
    for (const [what, query, code] of cases) {
      it(`${what} -> 400 ${code}`, async () => {
        const { status, body } = await gw.request(`/sse?${query}`);
        expect(status).to.equal(400);
        expect(body.error).to.equal(code);
      });
    }

    it('10,000 channels and a 100 KB Last-Event-ID -> 400 (over the header limit)', async () => {
      const many = range(1, 10000).map((i) => `c${i}`).join(',');
      expect(await rawRequest(gw.port, `GET /sse?channels=${many} HTTP/1.1\r\nHost: x\r\n\r\n`)).to.match(/^HTTP\/1\.1 4\d\d/);
      const huge = `GET /sse?channels=a HTTP/1.1\r\nHost: x\r\nLast-Event-ID: ${'1.a,'.repeat(25000)}\r\n\r\n`;
      expect(await rawRequest(gw.port, huge)).to.match(/^HTTP\/1\.1 4\d\d/);
    });

    it('a request body on GET -> 400', async () => {
      const got = await rawRequest(gw.port, 'GET /sse?channels=a HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 5\r\n\r\nhello');
      expect(got).to.match(/^HTTP\/1\.1 400[^]*GET \/sse takes no request body/);
    });

    it('POST /sse -> 405', async () => {
      expect((await gw.request('/sse?channels=a', { method: 'POST', body: 'x' })).status).to.equal(405);
    });

    it('HTTP/1.0 gets the stream, delimited by the close', async () => {
      const got = await rawRequest(gw.port, 'GET /sse?channels=old HTTP/1.0\r\n\r\n', 800);
      expect(got).to.match(/^HTTP\/1\.1 200 OK\r\n[^]*Connection: close\r\n[^]*\r\nretry: 2000\n\n/);
      expect(got).to.match(/\n\nid: 0\.[0-9a-z]+\nevent: ready\ndata: {"connectionId":"[0-9a-z-]+"}\n\n/);
    });

    it('a request pipelined behind a stream closes that connection only', async () => {
      const got = await rawRequest(gw.port, 'GET /sse?channels=p HTTP/1.1\r\nHost: x\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\n\r\n', 800);
      expect(got).to.match(/^HTTP\/1\.1 200 OK/);
      expect(got).to.not.include('"status":"ok"');
    });
  });
});

describe('SSE: limits, CORS, slow consumers, drain', function () {
  let gw;
  afterEach(() => gw?.stop());

  it('counts streams with WebSockets against --max-conns-per-ip', async () => {
    gw = await startGateway(['--max-conns-per-ip', '2']);
    const s1 = await SseReader.open(`${gw.http}/sse?channels=a`);
    const ws = await TestClient.connect(gw.url);
    const refused = await new SseReader(`${gw.http}/sse?channels=a`).response;
    expect(refused.status).to.equal(429);
    const third = new TestClient(new WebSocket(gw.url));
    expect((await third.opened.catch((e) => e)).status).to.equal(429);
    await s1.close();
    await eventually(async () => (await new SseReader(`${gw.http}/sse?channels=a`).response).status === 200, { what: 'room again' });
    ws.close();
  });

  it('answers CORS for EventSource: * without a list, the Origin echoed with one, 403 for others; never credentials', async () => {
    gw = await startGateway(['--allowed-origins', 'https://app.example']);
    const ok = await SseReader.open(`${gw.http}/sse?channels=a`, { headers: { Origin: 'https://app.example' } });
    const { headers } = await ok.response;
    expect(headers['access-control-allow-origin']).to.equal('https://app.example');
    expect(headers.vary).to.equal('Origin');
    expect(headers['access-control-allow-credentials']).to.equal(undefined);
    await ok.close();
    const bad = await new SseReader(`${gw.http}/sse?channels=a`, { headers: { Origin: 'https://evil.example' } }).response;
    expect(bad.status).to.equal(403);
    await gw.stop();
    gw = await startGateway([]);
    const any = await SseReader.open(`${gw.http}/sse?channels=a`, { headers: { Origin: 'https://other.example' } });
    expect((await any.response).headers['access-control-allow-origin']).to.equal('*');
    await any.close();
  });

  it('cuts a stream that stops reading at --max-buffered; the others keep receiving', async () => {
    gw = await startGateway(['--workers', '1', '--max-buffered', '262144', '--api-key', API_KEY, '--max-payload', '65536']);
    const slow = await SseReader.open(`${gw.http}/sse?channels=fire`);
    const normal = await SseReader.open(`${gw.http}/sse?channels=fire`);
    await eventually(() => slow.lastEventId !== undefined && normal.lastEventId !== undefined, { what: 'subscribed' });
    slow.res.pause();
    slow.req.socket.pause();
    const chunk = 'x'.repeat(60000);
    let sent = 0;
    // Paced so the normal stream keeps up: only the paused one falls behind.
    while (!(await gw.metric('gateway_messages_dropped_total', '{reason="slow_consumer"}')) && sent < 600) {
      for (let j = 0; j < 4; j++) await httpPublish(gw, 'fire', { i: ++sent, chunk });
      await eventually(() => normal.messages().length === sent, { what: 'normal keeps up' });
    }
    expect(await gw.metric('gateway_connections_closed_total', '{transport="sse",reason="try_again"}')).to.equal(1);
    slow.req.socket.resume(); // to read up to the cut
    slow.res.resume();
    await slow.closed;
    await httpPublish(gw, 'fire', { i: ++sent });
    await eventually(() => normal.messages().length === sent, { what: 'normal after the cut' });
    expect(normal.messages().map((m) => m.seq)).to.deep.equal(range(1, sent));
    await normal.close();
  });

  it('drain ends the streams, answers /health and /sse 503', async () => {
    gw = await startGateway(['--drain-timeout', '600', '--workers', '1']);
    const readers = await Promise.all(range(2, 5).map((i) => SseReader.open(`${gw.http}/sse?channels=d`, { localAddress: `127.0.0.${i}` })));
    // Two kept-alive connections, opened before the primary closes the port.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 2 });
    const get = (path) =>
      new Promise((resolve, reject) => {
        http.get(`${gw.http}${path}`, { agent }, (res) => res.resume().on('end', () => resolve(res.statusCode))).on('error', reject);
      });
    expect(await Promise.all([get('/health'), get('/health')])).to.deep.equal([200, 200]);
    gw.signal('SIGTERM');
    await Promise.race(readers.map((r) => r.closed));
    expect(await Promise.all([get('/health'), get('/sse?channels=d')])).to.deep.equal([503, 503]);
    await Promise.all(readers.map((r) => r.closed));
    expect((await gw.exited).code).to.equal(0);
  });
});

describe('SSE under --auth jwt', function () {
  let gw;
  before(async () => {
    gw = await startGateway(['--auth', 'jwt', '--jwt-secret', SECRET, '--api-key', API_KEY]);
  });
  after(() => gw.stop());

  const token = (claims) => joseHs256({ sub: 'u1', subscribe: ['news', 'user:{sub}'], ...claims });

  it('takes the token as a query parameter and applies its subscribe permissions', async () => {
    const t = await token({});
    const reader = await SseReader.open(`${gw.http}/sse?channels=news,user:u1&token=${t}`);
    try {
      await httpPublish(gw, 'user:u1', 'mine');
      await httpPublish(gw, 'news', 'all');
      await eventually(() => reader.messages().length === 2, { what: 'own channel and news' });
      expect(reader.messages().map((m) => [m.channel, m.data])).to.deep.equal([['user:u1', 'mine'], ['news', 'all']]);
    } finally {
      await reader.close();
    }

    // The same token on another user's channel ({sub} is u1) or one it does not list: refused, counted.
    const refusedBefore = (await gw.metric('gateway_auth_failures_total', '{reason="forbidden"}')) ?? 0;
    for (const channel of ['user:u2', 'sports']) {
      const refused = await gw.request(`/sse?channels=news,${channel}&token=${t}`);
      expect(refused.status, channel).to.equal(403);
      expect(refused.body.error).to.equal(ErrorCode.FORBIDDEN);
      expect(refused.body.message).to.include(channel);
    }
    await eventually(async () => (await gw.metric('gateway_auth_failures_total', '{reason="forbidden"}')) === refusedBefore + 2, {
      what: 'two forbidden refusals counted'
    });
  });

  it('401 without a token or with a bad one; 403 for a channel the token does not allow', async () => {
    expect((await gw.request('/sse?channels=news')).status).to.equal(401);
    expect((await gw.request('/sse?channels=news&token=abc.def.ghi')).status).to.equal(401);
    const expired = await token({ exp: nowS() - 10 });
    expect((await gw.request(`/sse?channels=news&token=${expired}`)).status).to.equal(401);
    const forbidden = await gw.request(`/sse?channels=news,user:u2&token=${await token({})}`);
    expect(forbidden.status).to.equal(403);
    expect(forbidden.body).to.include({ error: 'forbidden' });
  });

  it("ends the stream when the token's exp passes", async () => {
    const reader = await SseReader.open(`${gw.http}/sse?channels=news&token=${await token({ exp: nowS() + 2 })}`);
    await reader.closed;
    await eventually(async () => (await gw.metric('gateway_connections_closed_total', '{transport="sse",reason="token_expired"}')) === 1, {
      what: 'closed for token_expired'
    });
  });

  it('POST /disconnect ends the user\'s streams', async () => {
    const reader = await SseReader.open(`${gw.http}/sse?channels=news&token=${await token({ sub: 'kick' })}`);
    const res = await gw.request('/disconnect', { method: 'POST', headers: { Authorization: `Bearer ${API_KEY}` }, body: '{"user":"kick"}' });
    expect(res.body).to.deep.equal({ disconnected: 1 });
    await reader.closed;
  });
});

describe('the client over SSE', function () {
  let gw;
  let clients = [];
  const client = (options) => {
    const c = connect(gw.url, { WebSocket, EventSource, backoffBase: 50, backoffCap: 400, ...options });
    clients.push(c);
    return c;
  };
  before(async () => {
    gw = await startGateway(['--api-key', API_KEY]);
  });
  afterEach(() => {
    for (const c of clients) c.close();
    clients = [];
  });
  after(() => gw.stop());

  it("transport 'sse': receives, adds a channel without losing the others' messages, refuses publish", async () => {
    const c = client({ transport: 'sse' });
    const got = [];
    await c.subscribe('cs1', (data, m) => got.push([m.channel, m.seq]));
    expect(c.transport).to.equal('sse');
    expect(c.welcome).to.include({ transport: 'sse' });
    await httpPublish(gw, 'cs1', 1);
    await eventually(() => got.length === 1, { what: 'first' });
    // The stream reopens for the new channel; what cs1 gets meanwhile is replayed.
    const adding = c.subscribe('cs2', (data, m) => got.push([m.channel, m.seq]));
    await httpPublish(gw, 'cs1', 2);
    await adding;
    await httpPublish(gw, 'cs1', 3);
    await httpPublish(gw, 'cs2', 1);
    await eventually(() => got.length === 4, { what: 'four messages' });
    expect(got).to.deep.equal([['cs1', 1], ['cs1', 2], ['cs1', 3], ['cs2', 1]]);
    const refused = await c.publish('cs1', 'x').catch((e) => e);
    expect(refused.code).to.equal('receive_only');
  });

  it("transport 'auto': falls back to SSE when WebSockets fail, then goes back to WebSocket, losing nothing", async () => {
    let reachable = false;
    class FlakyWebSocket extends WebSocket {
      constructor(url) {
        super(reachable ? url : url.replace(/\/ws$/, '/nowhere'));
      }
    }
    const c = client({ WebSocket: FlakyWebSocket, fallbackAfter: 2, websocketRetry: 1500 });
    const got = [];
    await c.subscribe('auto', (data) => got.push(data));
    expect(c.transport).to.equal('sse');
    await httpPublish(gw, 'auto', 1);
    await eventually(() => got.length === 1, { what: 'over SSE' });
    reachable = true;
    await eventually(() => c.transport === 'websocket' && c.state === State.OPEN && c.welcome.worker > 0, { what: 'back on WebSocket' });
    await httpPublish(gw, 'auto', 2);
    await eventually(() => got.length === 2, { what: 'over WebSocket' });
    expect(got).to.deep.equal([1, 2]);
  });
});
