// The Redis engine behind Sentinel, with real processes: a master, two
// replicas and three sentinels; two gateway nodes publish through the
// master's death (SIGKILL) and through a partition (the master paused past
// Sentinel's down-after period, then resumed as a replica). Under
// --redis-wait-replicas 1 nothing acknowledged is lost, nothing is delivered
// twice, the epoch holds and the held subscribers need do nothing.
import { expect } from 'chai';
import { startGateway, eventually } from '../../../scripts/harness/gateway.js';
import { TestClient } from '../../helpers/client.js';
import { SentinelGroup } from '../../../scripts/harness/redis-topologies.js';
import { RedisServer } from '../../../scripts/harness/redis.js';
import { holdPublishers, holdSubscribers, expectAllDelivered, expectRecovery, watchHealth } from '../../helpers/through-fault.js';

const CHANNELS = ['s1', 's2'];

describe('redis engine behind Sentinel', function () {
  this.timeout(90000);
  let group;
  let gateways = [];
  let clients = [];
  const start = async (args) => {
    const gw = await startGateway(['--engine', 'redis', '--redis-sentinels', group.addresses, '--max-publish-rate', '100000', ...args]);
    gateways.push(gw);
    return gw;
  };
  afterEach(async () => {
    for (const client of clients) client.close();
    clients = [];
    await Promise.all(gateways.map((gw) => gw.stop()));
    gateways = [];
    await group?.remove();
    group = undefined;
  });

  for (const fault of ['SIGKILL', 'SIGSTOP']) {
    it(`loses no acknowledged publish through the master's ${fault === 'SIGKILL' ? 'death' : 'pause (a partition)'} with --redis-wait-replicas 1`, async () => {
      group = await SentinelGroup.start();
      const [a, b] = await Promise.all([0, 1].map(() => start(['--redis-wait-replicas', '1', '--redis-wait-timeout', '500'])));
      await eventually(async () => (await a.metric('gateway_engine_up')) === 1 && (await b.metric('gateway_engine_up')) === 1, { what: 'both engines up' });
      const subscribers = await holdSubscribers([a, b], CHANNELS, clients);
      const publishers = await holdPublishers([a, b], CHANNELS, clients);
      await eventually(() => publishers.every((p) => p.acked.length >= 20), { what: '20 acknowledged publishes each' });

      const health = watchHealth(a);
      const master = await group.master();
      const faultAt = Date.now();
      master.signal(fault);
      const promoted = await group.failedOver(master);
      if (fault === 'SIGSTOP') master.signal('SIGCONT'); // back as a replica of the new master
      await eventually(() => publishers.every((p) => p.ackedSince(faultAt) >= 20), { timeout: 20000, what: 'publishes flowing on both nodes again' });
      await Promise.all(publishers.map((p) => p.stop()));
      health.stop();

      const acked = publishers.flatMap((p) => p.acked);
      await expectAllDelivered(subscribers, acked, { sameEpoch: true });
      await expectRecovery(b, acked, clients);
      expect(health.seen, '/health during the failover').to.include('degraded');
      expect(await a.metric('gateway_engine_failovers_total'), 'failovers counted').to.be.at.least(1);
      if (fault === 'SIGSTOP') {
        await eventually(async () => /role:slave/.test(await master.command('INFO', 'replication')), { what: 'the old master a replica' });
      }
      expect(promoted.port).to.not.equal(master.port);
    });
  }

  it('starts degraded while no sentinel answers, and comes up when they do', async () => {
    group = await SentinelGroup.start();
    for (const sentinel of group.sentinels) await sentinel.stop();
    const gw = await start([]);
    expect((await gw.request('/health')).body).to.deep.equal({ status: 'degraded' });
    const client = await TestClient.connect(gw.url);
    clients.push(client);
    expect(await client.publish('s1', { early: true })).to.include({ type: 'error', code: 'unavailable' });
    for (const sentinel of group.sentinels) await sentinel.start();
    await eventually(async () => (await gw.request('/health')).body.status === 'ok', { timeout: 15000, what: '/health ok' });
    expect(await client.publish('s1', { later: true })).to.include({ type: 'ack', seq: 1 });
  });
});

/** A single Redis that lost the tail a node delivered: the sequence starts over, and the subscribers see it. */
describe('redis engine: a Redis behind what a node delivered', function () {
  let redis;
  let gw;
  let clients = [];
  after(async () => {
    for (const client of clients) client.close();
    await gw?.stop();
    await redis?.remove();
  });

  it('starts a new epoch instead of giving a seq twice', async () => {
    redis = await RedisServer.start();
    gw = await startGateway(['--engine', 'redis', '--redis-url', redis.url]);
    const subscriber = await TestClient.connect(gw.url);
    const publisher = await TestClient.connect(gw.url);
    clients = [subscriber, publisher];
    const { epoch } = await subscriber.subscribe('tail');
    for (let i = 1; i <= 5; i++) await publisher.publish('tail', { i });
    await subscriber.next(() => subscriber.messages('tail').length === 5);
    // As after a failover to a replica that had only seq 3: the tail 4, 5 is gone.
    await redis.command('HSET', 'gw:{tail}:state', 's', '3');
    await redis.command('XTRIM', 'gw:{tail}:history', 'MAXLEN', '3');
    await redis.command('CLIENT', 'KILL', 'TYPE', 'pubsub'); // the node resubscribes and catches up
    await eventually(async () => (await redis.command('HGET', 'gw:{tail}:state', 'e')) !== epoch, { what: 'a new epoch in Redis' });
    const ack = await publisher.publish('tail', { i: 6 });
    expect(ack.epoch).to.not.equal(epoch);
    expect(ack.seq).to.equal(1);
    await subscriber.next(() => subscriber.messages('tail').length === 6);
    expect(subscriber.messages('tail').map((m) => m.seq)).to.deep.equal([1, 2, 3, 4, 5, 1]);
    const again = await TestClient.connect(gw.url);
    clients.push(again);
    expect(await again.request({ type: 'subscribe', channel: 'tail', since: { seq: 5, epoch } })).to.include({ recovered: false, epoch: ack.epoch });
  });
});

/**
 * Under --redis-wait-replicas a node delivers only what the replicas hold, so
 * a failover to one cannot take back a message a subscriber already has (the
 * race behind a new epoch in the Sentinel tests above, made certain here).
 */
describe('redis engine: --redis-wait-replicas delivers only what the replicas hold', function () {
  let master;
  let replica;
  let gw;
  let clients = [];
  after(async () => {
    for (const client of clients) client.close();
    replica?.signal('SIGCONT');
    await gw?.stop();
    await Promise.all([master?.remove(), replica?.remove()]);
  });

  it('sends a refused publish no one live, and brings it in order once the replica has it', async () => {
    master = await RedisServer.start();
    replica = await RedisServer.start(['--replicaof', '127.0.0.1', String(master.port)]);
    await eventually(async () => /connected_slaves:1/.test(await master.command('INFO', 'replication')), { what: 'the replica in sync' });
    gw = await startGateway(['--engine', 'redis', '--redis-url', master.url, '--redis-wait-replicas', '1', '--redis-wait-timeout', '300']);
    const subscribers = await Promise.all(['127.0.0.1', '127.0.0.2'].map((localAddress) => TestClient.connect(gw.url, { localAddress })));
    const publisher = await TestClient.connect(gw.url);
    clients = [...subscribers, publisher];
    const epochs = await Promise.all(subscribers.map(async (s) => (await s.subscribe('held')).epoch));

    replica.signal('SIGSTOP'); // stored on the master alone: WAIT cannot confirm it
    expect(await publisher.publish('held', { n: 1 })).to.include({ type: 'error', code: 'unavailable' });
    // A publish goes out live only once WAIT confirms it: a subscriber must not see what may yet be lost.
    for (const s of subscribers) expect(s.messages('held'), 'delivered while no replica held it').to.have.length(0);

    replica.signal('SIGCONT');
    const ack = await eventually(async () => {
      const reply = await publisher.publish('held', { n: 2 });
      return reply.type === 'ack' && reply;
    }, { what: 'a publish the replica confirms' });
    for (const [i, s] of subscribers.entries()) {
      await eventually(() => s.messages('held').length === ack.seq, { what: `${ack.seq} messages at subscriber ${i}` });
      expect(s.messages('held').map((m) => m.seq)).to.deep.equal([...Array(ack.seq).keys()].map((k) => k + 1));
      expect(s.messages('held')[0].data).to.deep.equal({ n: 1 }); // the refused one, from the history, in its place
      expect(ack.epoch).to.equal(epochs[i]);
    }
  });
});
