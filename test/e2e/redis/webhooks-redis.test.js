// Webhooks under the Redis engine: two gateway nodes (each a primary with
// two workers) share one real redis-server and one endpoint; every
// occupied/vacated is sent exactly once for the cluster, a crashed node's
// channels are vacated by the survivor. The member grace across nodes, on
// the same Redis, through MemberGrace itself (presence, which calls it in
// the gateway, is another branch). The same under Redis Cluster.
import { expect } from 'chai';
import { Cluster, Redis } from 'ioredis';
import { startGateway, eventually } from '../../../scripts/harness/gateway.js';
import { RedisServer } from '../../../scripts/harness/redis.js';
import { RedisClusterGroup } from '../../../scripts/harness/redis-topologies.js';
import { TestClient } from '../../helpers/client.js';
import { WebhookEndpoint, WEBHOOK_SECRET } from '../../helpers/webhook-endpoint.js';
import { MemberGrace } from '../../../lib/webhooks/members.js';
import { LocalDepartures } from '../../../lib/engines/departures-memory.js';
import { RemoteDepartures } from '../../../lib/engines/redis/departures.js';
import { ENTRY_TTL_MS } from '../../../lib/engines/redis/occupancy.js';
import { sleep } from '../../helpers/wait.js';

let markers = 0;
/**
 * Shows that no event is still on its way from `client`'s node: a fresh
 * channel occupied there, through the same worker and the same ordered
 * webhook queue, arrives behind any event sent before it.
 */
async function markerThrough(endpoint, client) {
  const channel = `marker-${++markers}`;
  await client.subscribe(channel);
  await eventually(() => endpoint.namesOn(channel).length === 1, { what: `the marker ${channel}` });
}

describe('webhooks: once per cluster (redis engine, two nodes)', function () {
  this.timeout(90000);
  let redis;
  let endpoint;
  let a;
  let b;
  let clients = [];
  const connect = async (gw, localAddress = '127.0.0.1') => {
    const client = await TestClient.connect(gw.url, { localAddress });
    clients.push(client);
    return client;
  };
  const marker = (client) => markerThrough(endpoint, client);

  before(async () => {
    redis = await RedisServer.start();
    endpoint = await WebhookEndpoint.start();
    const args = ['--engine', 'redis', '--redis-url', redis.url, '--webhook-url', endpoint.url, '--webhook-secret', WEBHOOK_SECRET, '--max-subscriptions', '2000'];
    [a, b] = await Promise.all([startGateway(args), startGateway(args)]);
  });
  afterEach(() => {
    for (const client of clients) client.close();
    clients = [];
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    endpoint?.close();
    await redis?.remove();
  });

  it('sends occupied when the first node gets a subscriber and vacated when the last one loses it, once', async () => {
    const onA = await connect(a);
    await onA.subscribe('shared');
    await eventually(() => endpoint.namesOn('shared').length === 1, { what: 'occupied' });
    const onB = await connect(b, '127.0.0.2');
    await onB.subscribe('shared');
    // B's node tells Redis it routes the channel after the ack, on its own connection: A leaves once it has.
    await eventually(async () => Number(await redis.command('HGET', 'gw:{#occupancy}:nodes', 'shared')) === 2, { what: 'both nodes route it' });
    await onA.request({ type: 'unsubscribe', channel: 'shared' });
    await marker(onA); // an event A's node sent by mistake would be in before it
    expect(endpoint.namesOn('shared')).to.deep.equal(['channel_occupied']);
    await onB.request({ type: 'unsubscribe', channel: 'shared' });
    await eventually(() => endpoint.namesOn('shared').length === 2, { what: 'vacated' });
    await Promise.all([marker(onA), marker(onB)]);
    expect(endpoint.namesOn('shared')).to.deep.equal(['channel_occupied', 'channel_vacated']);
    expect(endpoint.badSignatures).to.equal(0);
  });

  it('sends each event exactly once when both nodes and all workers race on the same channels', async () => {
    const channels = Array.from({ length: 40 }, (_, i) => `race-${i}`);
    const subscribers = await Promise.all([a, b].flatMap((gw) => ['127.0.0.1', '127.0.0.2', '127.0.0.3'].map((address) => connect(gw, address))));
    await Promise.all(subscribers.flatMap((client) => channels.map((channel) => client.subscribe(channel))));
    await eventually(() => channels.every((c) => endpoint.namesOn(c).length === 1), { what: '40 occupied' });
    for (const client of subscribers) client.close();
    await eventually(() => channels.every((c) => endpoint.namesOn(c).length === 2), { what: '40 vacated' });
    await Promise.all([connect(a), connect(b, '127.0.0.2'), connect(b, '127.0.0.3')].map(async (client) => marker(await client)));
    for (const channel of channels) expect(endpoint.namesOn(channel), channel).to.deep.equal(['channel_occupied', 'channel_vacated']);
  });

  it("vacates a crashed node's channels (1,500 of them, swept a thousand a call) from the surviving node once its entries lapse", async () => {
    const onA = await connect(a);
    const orphans = Array.from({ length: 1500 }, (_, i) => `orphan-${i}`);
    await Promise.all(orphans.map((channel) => onA.subscribe(channel)));
    const onB = await connect(b);
    await onB.subscribe('kept');
    await eventually(() => orphans.every((c) => endpoint.namesOn(c).length === 1) && endpoint.namesOn('kept').length === 1, { what: 'occupied' });
    await a.stop(); // SIGKILL: its unsubscribes never reach Redis
    const vacated = () => endpoint.events.filter((e) => e.name === 'channel_vacated' && e.channel.startsWith('orphan-')).length;
    await eventually(() => vacated() > 0, { what: 'the first vacated', timeout: ENTRY_TTL_MS + 15000 });
    await eventually(() => vacated() === orphans.length, { what: 'all vacated in a few calls, not a renewal each', timeout: 3000 });
    for (const channel of orphans) expect(endpoint.namesOn(channel), channel).to.deep.equal(['channel_occupied', 'channel_vacated']);
    expect(endpoint.namesOn('kept')).to.deep.equal(['channel_occupied']); // renewed by B all along
  });
});

describe('webhooks: the member grace', function () {
  this.timeout(30000);
  const GRACE_MS = 300;
  const silent = { warn() {} };
  let server;
  const connections = [];

  /** Two nodes' graces over `departures(i)`, announcing into one list. */
  const nodes = (departures) => {
    const announced = [];
    const graces = [0, 1].map(
      (i) => new MemberGrace({ departures: departures(i), graceMs: GRACE_MS, announce: (name, channel, user) => announced.push(`${name} ${channel} ${user}`), log: silent })
    );
    return { announced, graces };
  };

  before(async () => {
    server = await RedisServer.start();
  });
  after(async () => {
    for (const connection of connections) connection.disconnect();
    await server?.remove();
  });

  const stores = {
    'on one machine': () => {
      const shared = new LocalDepartures();
      return () => shared;
    },
    'across nodes, in Redis': () => () => {
      const connection = new Redis(server.url);
      connections.push(connection);
      return new RemoteDepartures(connection);
    }
  };
  for (const [where, store] of Object.entries(stores)) {
    describe(where, () => {
      it('announces a new member, and its departure once the grace has passed', async () => {
        const { announced, graces } = nodes(store());
        graces[0].member('room', 'u1', true);
        await eventually(() => announced.length === 1);
        const left = Date.now();
        graces[1].member('room', 'u1', false);
        await eventually(() => announced.length === 2, { what: 'member_removed' });
        expect(Date.now() - left).to.be.at.least(GRACE_MS - 20);
        await sleep(GRACE_MS);
        expect(announced).to.deep.equal(['member_added room u1', 'member_removed room u1']);
      });

      it('announces nothing for a member who leaves on one node and comes back on the other within the grace', async () => {
        const { announced, graces } = nodes(store());
        graces[0].member('room', 'u2', false);
        await sleep(GRACE_MS / 3);
        graces[1].member('room', 'u2', true);
        await sleep(GRACE_MS * 3);
        expect(announced).to.deep.equal([]);
      });

      it('announces both for a member who comes back after the grace, and only the last departure after leaving twice', async () => {
        const { announced, graces } = nodes(store());
        graces[0].member('room', 'u3', false);
        await sleep(GRACE_MS * 2);
        graces[1].member('room', 'u3', true);
        graces[1].member('room', 'u3', false); // gone again at once: a departure of its own
        await sleep(GRACE_MS / 3);
        graces[0].member('room', 'u3', true);
        graces[0].member('room', 'u3', false);
        await sleep(GRACE_MS * 3);
        expect(announced).to.deep.equal(['member_removed room u3', 'member_added room u3', 'member_removed room u3']);
      });
    });
  }
});

describe('webhooks: Redis Cluster', function () {
  this.timeout(120000);
  let group;
  let endpoint;
  let gateways = [];
  const clients = [];
  let cluster;
  after(async () => {
    for (const client of clients) client.close();
    cluster?.disconnect();
    await Promise.all(gateways.map((gw) => gw.stop()));
    endpoint?.close();
    await group?.remove();
  });

  it('sends each occupied and vacated once across two nodes, and keeps member markers on the channel\'s shard', async () => {
    group = await RedisClusterGroup.start();
    endpoint = await WebhookEndpoint.start();
    const args = ['--engine', 'redis', '--redis-cluster', group.addresses, '--webhook-url', endpoint.url, '--webhook-secret', WEBHOOK_SECRET];
    gateways = await Promise.all([startGateway(args), startGateway(args)]);
    await eventually(async () => (await Promise.all(gateways.map((gw) => gw.metric('gateway_engine_up')))).every((up) => up === 1), { what: 'both engines up' });
    const channels = Array.from({ length: 12 }, (_, i) => `shard-${i}`); // over the three shards
    expect(new Set(await Promise.all(channels.map((c) => group.masterOf(`gw:{${c}}`)))).size).to.equal(3);
    const subscribers = await Promise.all(gateways.map((gw) => TestClient.connect(gw.url)));
    clients.push(...subscribers);
    await Promise.all(subscribers.flatMap((client) => channels.map((channel) => client.subscribe(channel))));
    await eventually(() => channels.every((c) => endpoint.namesOn(c).length === 1), { what: 'occupied' });
    await Promise.all(subscribers.flatMap((client) => channels.map((channel) => client.request({ type: 'unsubscribe', channel }))));
    await eventually(() => channels.every((c) => endpoint.namesOn(c).length === 2), { what: 'vacated' });
    await Promise.all(subscribers.map((client) => markerThrough(endpoint, client)));
    for (const channel of channels) expect(endpoint.namesOn(channel), channel).to.deep.equal(['channel_occupied', 'channel_vacated']);

    cluster = new Cluster(group.addresses.split(',').map((address) => ({ host: '127.0.0.1', port: Number(address.split(':')[1]) })));
    const announced = [];
    const graces = [0, 1].map(() => new MemberGrace({ departures: new RemoteDepartures(cluster), graceMs: 300, announce: (name, channel) => announced.push(`${name} ${channel}`), log: { warn() {} } }));
    for (const channel of channels) graces[0].member(channel, 'u', false);
    await sleep(100);
    for (const channel of channels.slice(0, 6)) graces[1].member(channel, 'u', true); // back within the grace: silent
    await sleep(900);
    expect(announced.sort()).to.deep.equal(channels.slice(6).map((c) => `member_removed ${c}`).sort());
  });
});
