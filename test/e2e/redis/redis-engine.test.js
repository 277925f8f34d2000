// The Redis engine against a real redis-server: two gateway processes (each
// a primary with workers) share it, as two machines behind one load balancer
// would. One order on every node, recovery across nodes, Redis slow, gone,
// back, and back empty.
import { expect } from 'chai';
import { startGateway, eventually } from '../../../scripts/harness/gateway.js';
import { TestClient } from '../../helpers/client.js';
import { API_KEY, httpPublish } from '../../helpers/client-helpers.js';
import { RedisServer } from '../../../scripts/harness/redis.js';
import { SECRET, joseHs256 } from '../../helpers/tokens.js';
import { sleep } from '../../helpers/wait.js';

const range = (from, to) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const seqs = (client, channel) => client.messages(channel).map((m) => m.seq);
const MAX_PAYLOAD = 8192;

describe('redis engine: several gateways share channels through Redis', function () {
  let redis;
  let a;
  let b;
  let clients = [];
  const connect = async (gw, options) => {
    const client = await TestClient.connect(gw.url, options);
    clients.push(client);
    return client;
  };
  /** Two subscribers on each node, from different source addresses (so on either worker). */
  const subscribersOn = async (channel) => {
    const subscribers = [];
    for (const gw of [a, b]) {
      for (const localAddress of ['127.0.0.1', '127.0.0.2']) {
        const client = await connect(gw, { localAddress });
        expect(await client.subscribe(channel)).to.include({ type: 'ack' });
        subscribers.push(client);
      }
    }
    return subscribers;
  };

  before(async () => {
    redis = await RedisServer.start();
    const args = ['--engine', 'redis', '--redis-url', redis.url, '--api-key', API_KEY, '--max-publish-rate', '100000'];
    [a, b] = await Promise.all([
      startGateway([...args, '--max-payload', String(MAX_PAYLOAD)]),
      startGateway([...args, '--max-payload', String(MAX_PAYLOAD)])
    ]);
    await eventually(async () => (await a.metric('gateway_engine_up')) === 1 && (await b.metric('gateway_engine_up')) === 1, {
      what: 'both engines up'
    });
  });
  afterEach(() => {
    for (const client of clients) client.close();
    clients = [];
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await redis?.remove();
  });

  it('gives publishes on both nodes, interleaved, one consecutive order that every subscriber sees', async () => {
    const subscribers = await subscribersOn('mixed');
    const [onA, onB] = [await connect(a), await connect(b)];
    for (let i = 0; i < 100; i++) {
      onA.send({ type: 'publish', channel: 'mixed', data: { node: 'a', i } });
      onB.send({ type: 'publish', channel: 'mixed', data: { node: 'b', i } });
    }
    for (const s of subscribers) await s.next(() => s.messages('mixed').length === 200);
    const order = subscribers[0].messages('mixed').map((m) => `${m.seq}:${m.data.node}${m.data.i}`);
    expect(seqs(subscribers[0], 'mixed')).to.deep.equal(range(1, 200));
    for (const s of subscribers) expect(s.messages('mixed').map((m) => `${m.seq}:${m.data.node}${m.data.i}`)).to.deep.equal(order);
  });

  it('recovers on node B what was published on node A while away', async () => {
    const first = await connect(a);
    const ack = await first.subscribe('moved');
    for (let i = 1; i <= 5; i++) await httpPublish(a, 'moved', { i });
    await first.next(() => first.messages('moved').length === 5);
    first.close();
    for (let i = 6; i <= 20; i++) await httpPublish(i % 2 ? a : b, 'moved', { i });

    const again = await connect(b);
    const recovered = await again.request({ type: 'subscribe', channel: 'moved', since: { seq: 5, epoch: ack.epoch } });
    expect(recovered).to.include({ seq: 20, epoch: ack.epoch, recovered: true });
    await again.next(() => again.messages('moved').length === 15);
    await httpPublish(a, 'moved', { i: 21 });
    await again.next(() => again.messages('moved').length === 16);
    expect(again.messages('moved').map((m) => m.data.i)).to.deep.equal(range(6, 21));
    expect(seqs(again, 'moved')).to.deep.equal(range(6, 21));
  });

  it('keeps every channel in its own keys, whatever its name', async () => {
    const names = ['k', 'k:state', 'k}:state', 'control', 'nodes', 'users:x'];
    const valid = names.filter((name) => !name.includes('}')); // braces are not channel characters
    const client = await connect(a);
    expect(await client.subscribe('k}:state')).to.include({ type: 'error', code: 'invalid_channel' });
    for (const name of valid) for (let i = 1; i <= 2; i++) expect(await httpPublish(b, name, i)).to.equal(i);
    const keys = (await redis.command('KEYS', 'gw:*')).filter((key) => valid.some((name) => key.startsWith(`gw:{${name}}`)));
    expect(keys.sort()).to.deep.equal(valid.flatMap((name) => [`gw:{${name}}:history`, `gw:{${name}}:state`]).sort());
  });

  it('relays a message at --max-payload across nodes', async () => {
    const [subscriber] = await subscribersOn('big').then((s) => s.slice(2)); // the two on node B
    const frame = { type: 'publish', channel: 'big', data: '', id: 1 }; // the publisher's first request
    const data = 'x'.repeat(MAX_PAYLOAD - JSON.stringify(frame).length);
    const publisher = await connect(a);
    expect(await publisher.publish('big', data)).to.include({ type: 'ack' });
    const message = await subscriber.next((f) => f.type === 'message');
    expect(message.data).to.equal(data);
  });

  it('gives the routes what they missed while their subscription to Redis was cut', async () => {
    const subscribers = await subscribersOn('cut');
    const publisher = await connect(a);
    // Publishing on, before, during and after the reconnection of every node's subscriber connection.
    let sent = 0;
    const publish = async (until) => {
      while (!until()) {
        publisher.send({ type: 'publish', channel: 'cut', data: { i: ++sent } });
        await sleep(1);
      }
    };
    await publish(() => sent === 50);
    await redis.command('CLIENT', 'KILL', 'TYPE', 'pubsub');
    const cutAt = Date.now();
    await publish(() => Date.now() - cutAt > 500);
    await eventually(() => httpPublish(a, 'cut', { i: 'last' }), { what: 'a publish after the cut' });
    for (const s of subscribers) {
      await s.next((f) => f.type === 'message' && f.data.i === 'last');
      expect(seqs(s, 'cut')).to.deep.equal(range(1, sent + 1));
    }
  });

  // A stall past the heartbeat's deadline reads as an outage (publishes refused
  // while it lasts), but shorter than its teardown: nothing in flight is dropped.
  it('stays up, and keeps its connections answering, while Redis is slow (DEBUG SLEEP)', async () => {
    const subscriber = (await subscribersOn('slow'))[2];
    const publisher = await connect(a);
    const sleeping = redis.command('DEBUG', 'SLEEP', '1.5');
    await sleep(100);
    expect(await publisher.request({ type: 'ping' })).to.include({ type: 'pong' });
    expect((await a.request('/health')).status).to.equal(200);
    publisher.send({ type: 'publish', channel: 'slow', data: 'during' });
    await sleeping;
    await subscriber.next((f) => f.type === 'message' && f.data === 'during');
    expect(await eventually(() => httpPublish(b, 'slow', 'after'), { what: 'a publish once Redis answers again' })).to.equal(2);
  });

  it('after Redis lost its state, a node that was not subscribed meanwhile sends its subscribers the new epoch from seq 1', async () => {
    const subscribers = await subscribersOn('wiped');
    await httpPublish(b, 'wiped', 'old');
    for (const s of subscribers) await s.next((f) => f.type === 'message' && f.data === 'old');
    // Both nodes' subscriber connections drop and the keys go: the publishes
    // that follow start a new epoch before the nodes have SUBSCRIBEd again.
    await redis.command('CLIENT', 'KILL', 'TYPE', 'pubsub');
    await redis.command('FLUSHALL');
    for (const data of ['new 1', 'new 2', 'new 3']) await httpPublish(b, 'wiped', data);
    for (const s of subscribers) {
      await s.next((f) => f.type === 'message' && f.data === 'new 3');
      expect(s.messages('wiped').map((m) => `${m.seq} ${m.data}`)).to.deep.equal(['1 old', '1 new 1', '2 new 2', '3 new 3']);
    }
  });

  // Last: it stops Redis.
  it('refuses publishes while Redis is gone, keeps connections, and resubscribes when it is back (empty: new epochs)', async () => {
    const subscribers = await subscribersOn('outage');
    const publisher = await connect(a);
    const before = await publisher.subscribe('outage');
    await httpPublish(a, 'outage', 'before');
    for (const s of subscribers) await s.next((f) => f.type === 'message' && f.data === 'before');

    await redis.stop();
    await eventually(async () => (await a.metric('gateway_engine_up')) === 0, { what: 'engine down on A' });
    await eventually(async () => (await a.request('/health')).body.status === 'degraded', { what: '/health degraded' });
    expect((await b.request('/health')).status).to.equal(200);
    await eventually(async () => (await publisher.publish('outage', 'lost')).code === 'unavailable', { what: 'unavailable' });
    const http = await a.request('/publish', {
      method: 'POST',
      headers: { Authorization: `Bearer ${API_KEY}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ channel: 'outage', data: 'lost' })
    });
    expect(http.status).to.equal(503);
    expect(http.body.error).to.equal('unavailable');
    expect(await publisher.request({ type: 'ping' })).to.include({ type: 'pong' });
    // A subscribe that needs Redis waits for it, and is answered once it is back.
    const waiting = (await connect(b)).subscribe('outage-new');

    await redis.start();
    await eventually(async () => (await a.metric('gateway_engine_up')) === 1 && (await b.metric('gateway_engine_up')) === 1, {
      what: 'both engines up again'
    });
    await eventually(async () => (await a.request('/health')).body.status === 'ok', { what: '/health ok' });
    expect(await waiting).to.include({ type: 'ack', seq: 0 });
    await eventually(async () => (await publisher.publish('outage', 'back')).type === 'ack', { what: 'publishes accepted' });
    for (const s of subscribers) await s.next((f) => f.type === 'message' && f.data === 'back');
    for (const s of subscribers) expect(s.messages('outage').some((m) => m.data === 'lost')).to.equal(false);

    // Redis came back empty: the old epoch recovers nothing, and says so.
    const late = await connect(b);
    const ack = await late.request({ type: 'subscribe', channel: 'outage', since: { seq: 1, epoch: before.epoch } });
    expect(ack.epoch).to.not.equal(before.epoch);
    expect(ack).to.include({ recovered: false });
  });
});

describe('redis engine: users across gateways', function () {
  let redis;
  let nodes = [];
  let clients = [];
  afterEach(() => {
    for (const c of clients) c.close();
    clients = [];
  });
  after(async () => {
    await Promise.all(nodes.map((gw) => gw.stop()));
    await redis?.remove();
  });

  /** An authenticated client as `user` on `gw`; resolves with [client, the auth's answer]. */
  const as = async (gw, user, localAddress) => {
    const client = await TestClient.connect(gw.url, { localAddress });
    clients.push(client);
    return [client, await client.request({ type: 'auth', token: await joseHs256({ sub: user, subscribe: ['*'] }) })];
  };

  before(async () => {
    redis = await RedisServer.start();
    const args = ['--engine', 'redis', '--redis-url', redis.url, '--api-key', API_KEY, '--auth', 'jwt', '--jwt-secret', SECRET];
    nodes = await Promise.all([startGateway([...args, '--max-conns-per-user', '3']), startGateway([...args, '--max-conns-per-user', '3'])]);
    for (const gw of nodes) await eventually(async () => (await gw.metric('gateway_engine_up')) === 1, { what: 'engine up' });
  });

  it('POST /disconnect on one node closes the user on every node, and counts them all', async () => {
    const targets = [];
    for (const [gw, address] of [[nodes[0], '127.0.0.1'], [nodes[0], '127.0.0.2'], [nodes[1], '127.0.0.1']]) {
      const [client, answer] = await as(gw, 'frank', address);
      expect(answer).to.include({ type: 'ack' });
      targets.push(client);
    }
    const [other] = await as(nodes[1], 'grace', '127.0.0.3');
    const res = await nodes[0].request('/disconnect', {
      method: 'POST',
      headers: { Authorization: `Bearer ${API_KEY}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ user: 'frank' })
    });
    expect(res).to.deep.include({ status: 200, body: { disconnected: 3 } });
    for (const client of targets) expect((await client.closed).code).to.equal(4004);
    expect(await other.request({ type: 'ping' })).to.include({ type: 'pong' });
  });

  it('--max-conns-per-user counts a user on every node, and frees a slot when one closes', async () => {
    const held = [];
    for (const [gw, address] of [[nodes[0], '127.0.0.1'], [nodes[1], '127.0.0.2'], [nodes[1], '127.0.0.1']]) {
      const [client, answer] = await as(gw, 'heidi', address);
      expect(answer).to.include({ type: 'ack' });
      held.push(client);
    }
    for (const gw of nodes) expect((await as(gw, 'heidi', '127.0.0.4'))[1]).to.include({ type: 'error', code: 'forbidden' });
    held[0].close();
    await eventually(async () => (await as(nodes[1], 'heidi', '127.0.0.5'))[1].type === 'ack', { what: 'a slot freed on the other node' });
  });
});
