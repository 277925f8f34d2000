// The core data path against the real gateway: 2 workers, real ws clients
// from several source addresses so both workers hold connections.
import net from 'node:net';
import { expect } from 'chai';
import { startGateway, eventually } from '../../../scripts/harness/gateway.js';
import { TestClient } from '../../helpers/client.js';

const API_KEY = 'test-key';

/** Opens clients from 127.0.0.1.. until each worker holds at least one; returns [onWorker1, onWorker2]. */
async function clientsOnBothWorkers(url) {
  const byWorker = new Map();
  for (let i = 1; i <= 32 && byWorker.size < 2; i++) {
    const client = await TestClient.connect(url, { localAddress: `127.0.0.${i}` });
    if (byWorker.has(client.welcome.worker)) client.close();
    else byWorker.set(client.welcome.worker, client);
  }
  expect(byWorker.size, 'clients on both workers').to.equal(2);
  return [byWorker.get(1), byWorker.get(2)];
}

describe('gateway: protocol and relay', function () {
  let gw;
  let clients = [];
  const track = (c) => (clients.push(c), c);

  before(async () => {
    gw = await startGateway([
      '--api-key', API_KEY,
      '--max-subscriptions', '3',
      '--max-publish-rate', '30',
      '--max-payload', '4096'
    ]);
  });
  afterEach(() => {
    for (const c of clients) c.close();
    clients = [];
  });
  after(() => gw.stop());

  it('greets with a welcome frame naming the worker and the ping interval', async () => {
    const c = track(await TestClient.connect(gw.url));
    expect(c.welcome).to.include({ type: 'welcome', pingInterval: 25000 });
    expect(c.welcome.worker).to.be.oneOf([1, 2]);
    expect(c.welcome.connectionId).to.be.a('string').and.not.empty;
  });

  it('acks subscribe and delivers a publish made on the other worker', async () => {
    const [a, b] = (await clientsOnBothWorkers(gw.url)).map(track);
    const ack = await a.subscribe('news');
    expect(ack).to.include({ type: 'ack', id: 1, seq: 0 });
    expect(ack.epoch).to.match(/^[0-9a-z]{1,16}$/);
    // A publish's ack says where the engine stored it: the channel's next seq, in the subscribe's epoch.
    expect(await b.publish('news', { hello: 'world' })).to.deep.equal({ type: 'ack', id: 1, seq: 1, epoch: ack.epoch });
    const m = await a.next((f) => f.type === 'message');
    expect(m).to.deep.equal({ type: 'message', channel: 'news', seq: 1, data: { hello: 'world' } });
  });

  it('gives 400 clients on both workers two interleaved publishers in one identical order', async () => {
    const subscribers = [];
    for (let i = 0; i < 400; i += 50) {
      const batch = await Promise.all(
        Array.from({ length: 50 }, (_, j) => TestClient.connect(gw.url, { localAddress: `127.0.0.${1 + ((i + j) % 16)}` }))
      );
      subscribers.push(...batch.map(track));
    }
    const workers = new Set(subscribers.map((c) => c.welcome.worker));
    expect([...workers].sort()).to.deep.equal([1, 2]);
    await Promise.all(subscribers.map((c) => c.subscribe('order')));
    await eventually(async () => (await gw.metric('gateway_connections')) === 400, { what: 'gateway_connections = 400' });

    const [p1, p2] = (await clientsOnBothWorkers(gw.url)).map(track);
    for (let i = 0; i < 25; i++) {
      p1.send({ type: 'publish', channel: 'order', data: { from: 1, i } });
      p2.send({ type: 'publish', channel: 'order', data: { from: 2, i } });
    }
    await Promise.all(subscribers.map((c) => c.next(() => c.messages('order').length === 50, 20000)));
    const reference = subscribers[0].messages('order');
    expect(reference.map((m) => m.seq)).to.deep.equal(Array.from({ length: 50 }, (_, i) => i + 1));
    for (const c of subscribers) expect(c.messages('order')).to.deep.equal(reference);
    // Each publisher's own messages keep their order inside the merged one.
    for (const from of [1, 2]) {
      expect(reference.filter((m) => m.data.from === from).map((m) => m.data.i)).to.deep.equal([...Array(25).keys()]);
    }
  });

  it('stops delivering after unsubscribe', async () => {
    const [a, b] = (await clientsOnBothWorkers(gw.url)).map(track);
    await a.subscribe('gone');
    await a.subscribe('marker');
    expect(await a.request({ type: 'unsubscribe', channel: 'gone' })).to.include({ type: 'ack' });
    await b.publish('gone', 1);
    await b.publish('marker', 2);
    // The relay keeps one order per worker: the marker arriving means 'gone' was not sent.
    await a.next((f) => f.type === 'message' && f.channel === 'marker');
    expect(a.messages('gone')).to.be.empty;
  });

  describe('bad frames get an error and the connection stays open', () => {
    const deep = (n) => '['.repeat(n) + ']'.repeat(n);
    const cases = [
      ['not JSON', '{nope', 'bad_request'],
      ['JSON that is not an object', '[1,2]', 'bad_request'],
      ['a JSON string', '"subscribe"', 'bad_request'],
      ['null', 'null', 'bad_request'],
      ['no type', '{"channel":"x"}', 'bad_request'],
      ['an unknown type', '{"type":"shout"}', 'bad_request'],
      ['a missing channel', '{"type":"subscribe"}', 'bad_request'],
      ['a channel that is a number', '{"type":"subscribe","channel":5}', 'invalid_channel'],
      ['an empty channel', '{"type":"subscribe","channel":""}', 'invalid_channel'],
      ['a channel with a space', '{"type":"publish","channel":"a b","data":1}', 'invalid_channel'],
      ['a channel of 129 characters', JSON.stringify({ type: 'subscribe', channel: 'x'.repeat(129) }), 'invalid_channel'],
      ['publish without data', '{"type":"publish","channel":"c"}', 'bad_request'],
      ['an object id', '{"type":"ping","id":{}}', 'bad_request'],
      ['data nested 65 deep', `{"type":"publish","channel":"c","data":${deep(65)}}`, 'bad_request']
    ];
    for (const [what, text, code] of cases) {
      it(`${what} -> ${code}`, async () => {
        const c = track(await TestClient.connect(gw.url));
        c.send(text);
        const err = await c.next((f) => f.type === 'error');
        expect(err.code).to.equal(code);
        expect(err.message).to.be.a('string').and.not.empty;
        expect(await c.request({ type: 'ping' })).to.include({ type: 'pong' });
      });
    }

    it('accepts data nested exactly 64 deep', async () => {
      const c = track(await TestClient.connect(gw.url));
      c.send(`{"type":"publish","channel":"c","data":${deep(64)},"id":"deep"}`);
      expect(await c.next((f) => f.id === 'deep')).to.include({ type: 'ack', id: 'deep', seq: 1 });
    });

    it('binary frame -> bad_request', async () => {
      const c = track(await TestClient.connect(gw.url));
      c.ws.send(Buffer.from([1, 2, 3]));
      expect((await c.next((f) => f.type === 'error')).code).to.equal('bad_request');
      expect(await c.request({ type: 'ping' })).to.include({ type: 'pong' });
    });

    it('echoes the id on errors', async () => {
      const c = track(await TestClient.connect(gw.url));
      expect(await c.request({ type: 'subscribe', channel: '!' })).to.include({ type: 'error', code: 'invalid_channel', id: 1 });
    });

    it('caps subscriptions per connection -> too_many_subscriptions', async () => {
      const c = track(await TestClient.connect(gw.url));
      for (const ch of ['s1', 's2', 's3']) expect(await c.subscribe(ch)).to.include({ type: 'ack' });
      expect(await c.subscribe('s3')).to.include({ type: 'ack' }); // already held: no new slot
      expect(await c.subscribe('s4')).to.include({ type: 'error', code: 'too_many_subscriptions' });
      await c.request({ type: 'unsubscribe', channel: 's1' });
      expect(await c.subscribe('s4')).to.include({ type: 'ack' });
    });

    it('limits publishes per connection -> rate_limited', async () => {
      const c = track(await TestClient.connect(gw.url));
      for (let i = 0; i < 60; i++) c.send({ type: 'publish', channel: 'fast', data: i, id: i });
      await c.next(() => c.frames.filter((f) => f.id !== undefined).length === 60);
      const answers = c.frames.filter((f) => f.id !== undefined);
      const limited = answers.filter((f) => f.code === 'rate_limited');
      expect(limited.length).to.be.within(20, 30); // a burst of 30, plus what refills meanwhile
      expect(answers.filter((f) => f.type === 'ack').length).to.equal(60 - limited.length);
    });

    it('survives channel names that are Object.prototype keys', async () => {
      const c = track(await TestClient.connect(gw.url));
      for (const ch of ['__proto__', 'constructor']) {
        expect(await c.subscribe(ch)).to.include({ type: 'ack' });
        await c.publish(ch, ch);
        expect((await c.next((f) => f.type === 'message' && f.channel === ch)).data).to.equal(ch);
      }
    });
  });

  it('closes a frame over --max-payload with 1009', async () => {
    const c = track(await TestClient.connect(gw.url));
    c.send({ type: 'publish', channel: 'big', data: 'x'.repeat(5000) });
    expect((await c.closed).code).to.equal(1009);
  });

  describe('HTTP', () => {
    const post = (body, key = API_KEY, headers = {}) =>
      gw.request('/publish', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', ...(key && { Authorization: `Bearer ${key}` }), ...headers },
        body: typeof body === 'string' ? body : JSON.stringify(body)
      });

    it('POST /publish delivers with the next seq (202)', async () => {
      const c = track(await TestClient.connect(gw.url));
      await c.subscribe('http');
      const first = await post({ channel: 'http', data: { n: 1 } });
      expect(first.status).to.equal(202);
      expect(first.body).to.deep.equal({ seq: 1 });
      expect((await post({ channel: 'http', data: { n: 2 } })).body).to.deep.equal({ seq: 2 });
      await c.next(() => c.messages('http').length === 2);
      expect(c.messages('http').map((m) => [m.seq, m.data.n])).to.deep.equal([[1, 1], [2, 2]]);
    });

    it('POST /publish refuses a missing key (401), a wrong key (403)', async () => {
      const missing = await post({ channel: 'c', data: 1 }, null);
      expect(missing.status).to.equal(401);
      expect(missing.headers.get('www-authenticate')).to.equal('Bearer');
      expect((await post({ channel: 'c', data: 1 }, 'wrong')).status).to.equal(403);
    });

    it('POST /publish refuses bad bodies (400) with the protocol code', async () => {
      for (const [body, code] of [
        ['{nope', 'bad_request'],
        ['[]', 'bad_request'],
        [{ channel: 'c' }, 'bad_request'],
        [{ channel: 'a b', data: 1 }, 'invalid_channel'],
        [`{"channel":"c","data":${'['.repeat(2000)}${']'.repeat(2000)}}`, 'bad_request'] // nested past the depth limit
      ]) {
        const res = await post(body);
        expect(res.status, JSON.stringify(body)).to.equal(400);
        expect(res.body.error).to.equal(code);
      }
    });

    it('POST /publish refuses a body over --max-payload (413)', async () => {
      const res = await post({ channel: 'c', data: 'x'.repeat(5000) });
      expect(res.status).to.equal(413);
      expect(res.body.error).to.equal('payload_too_large');
    });

    it('GET /health is 200 ok; unknown routes are 404 JSON', async () => {
      expect(await gw.request('/health')).to.include({ status: 200 }).and.deep.include({ body: { status: 'ok' } });
      const missing = await gw.request('/nothing/here');
      expect(missing.status).to.equal(404);
      expect(missing.body).to.deep.equal({ error: 'not_found' });
    });

    it('keeps the status page and /stats off the public port, on the metrics listener', async () => {
      for (const path of ['/', '/stats']) expect((await gw.request(path)).status, path).to.equal(404);
      const page = await gw.request('/', { port: gw.metricsPort });
      expect(page.status).to.equal(200);
      expect(page.body).to.include(`<meta name="gateway" content="{&quot;port&quot;:${gw.port},`);
      const stats = await eventually(async () => (await gw.request('/stats', { port: gw.metricsPort })).body.workers?.length === 2 && true);
      expect(stats).to.equal(true);
    });

    it('answers garbage on the public port with 400 or a close, and keeps serving', async () => {
      for (const junk of ['\x00\x01\x02garbage\r\n\r\n', 'GET / HTTP/9.9\r\n\r\n', 'GET /ws HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n']) {
        const answer = await rawExchange(gw.port, junk);
        expect(answer === '' || /^HTTP\/1\.1 400/.test(answer), JSON.stringify(answer)).to.equal(true);
      }
      expect((await gw.request('/health')).status).to.equal(200);
      const c = track(await TestClient.connect(gw.url));
      expect(await c.request({ type: 'ping' })).to.include({ type: 'pong' });
    });
  });

  it('exports cluster-wide totals on /metrics', async () => {
    const before = await gw.metric('gateway_messages_published_total');
    const [a, b] = (await clientsOnBothWorkers(gw.url)).map(track);
    await a.subscribe('m');
    await b.subscribe('m');
    await a.publish('m', 1);
    await Promise.all([a, b].map((c) => c.next((f) => f.type === 'message')));
    expect(await gw.metric('gateway_messages_published_total')).to.equal(before + 1);
    expect(await gw.metric('gateway_workers')).to.equal(2);
    await eventually(async () => (await gw.metric('gateway_connections')) === 2, { what: 'gateway_connections = 2' });
    expect(await gw.metric('gateway_subscriptions')).to.equal(2);
    expect(await gw.metric('gateway_messages_delivered_total')).to.be.at.least(2);
  });

  it("leaves out of /metrics the workers' figures that list every connection at each scrape", async () => {
    const names = new Set((await gw.metrics()).split('\n').map((line) => line.match(/^(\w+)[{ ]/)?.[1]));
    for (const costly of ['process_open_fds', 'nodejs_active_handles', 'nodejs_active_handles_total', 'nodejs_active_resources', 'nodejs_active_resources_total']) {
      expect(names.has(costly), costly).to.equal(false);
    }
    expect(names.has('process_max_fds')).to.equal(true);
    expect(names.has('gateway_primary_process_open_fds')).to.equal(true); // the primary holds no connections
  });
});

describe('gateway: HTTP publish disabled, Origin allow-list', function () {
  let gw;
  before(async () => {
    gw = await startGateway(['--allowed-origins', 'https://good.example, https://other.example']);
  });
  after(() => gw.stop());

  it('POST /publish is 403 without --api-key', async () => {
    const res = await gw.request('/publish', { method: 'POST', headers: { Authorization: 'Bearer x' }, body: '{}' });
    expect(res.status).to.equal(403);
    expect(res.body.error).to.equal('forbidden');
  });

  it('refuses an upgrade from a disallowed Origin with 403 and allows a listed one', async () => {
    const bad = new TestClient(new (await import('ws')).default(gw.url, { origin: 'https://evil.example' }));
    const err = await bad.opened.catch((e) => e);
    expect(err.status).to.equal(403);
    const good = await TestClient.connect(gw.url, { origin: 'https://other.example' });
    expect(good.welcome.type).to.equal('welcome');
    good.close();
  });
});

/** Writes raw bytes to the port; resolves with whatever comes back before the close. */
function rawExchange(port, bytes) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.end(bytes));
    let answer = '';
    socket.on('data', (d) => (answer += d));
    socket.on('close', () => resolve(answer));
    socket.on('error', reject);
    socket.setTimeout(5000, () => socket.destroy(new Error('no close within 5 s')));
  });
}
