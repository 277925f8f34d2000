// Presence and join/leave under --engine redis: two gateway nodes of two
// workers each over one real redis-server, a third node that crashes, and
// Redis restarted empty; and one node on Redis Cluster. --presence-ttl 2 keeps the expiry cases short.
import { expect } from 'chai';
import { startGateway, eventually } from '../../../scripts/harness/gateway.js';
import { startRedisNodes } from '../../helpers/redis-nodes.js';
import { RedisClusterGroup } from '../../../scripts/harness/redis-topologies.js';
import { configFile, result } from '../../helpers/api.js';
import { API_KEY } from '../../helpers/client-helpers.js';
import { SECRET } from '../../helpers/tokens.js';
import { presenceDigest } from '../../../lib/protocol/presence-hash.js';
import { ODD_INFO, PRESENCE_NAMESPACES, addressesByWorker, comeAndGo, member, named, presenceOf, twoTabsAndBob } from '../../helpers/presence.js';
import { sleep } from '../../helpers/wait.js';

const TTL_S = 2;

describe('presence and join/leave (redis engine, two nodes)', function () {
  let redis;
  let args;
  let a;
  let b;
  const clients = [];
  const track = (client) => (clients.push(client), client);
  /** A member change counted on every node: the cluster's total. */
  const changes = async (change, ...nodes) => {
    let total = 0;
    for (const gw of nodes) total += (await gw.metric('gateway_presence_member_changes_total', `{change="${change}"}`)) ?? 0;
    return total;
  };

  before(async () => {
    const own = ['--workers', '2', '--config', configFile(PRESENCE_NAMESPACES), '--auth', 'jwt', '--jwt-secret', SECRET, '--api-key', API_KEY, '--presence-ttl', String(TTL_S), '--join-leave-interval', '200'];
    ({ redis, nodes: [a, b], args } = await startRedisNodes(own));
  });
  afterEach(() => {
    for (const client of clients.splice(0)) client.close();
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await redis?.remove();
  });

  it('lists the same clients on every node; a user with a tab on each node arrives once and departs once, cluster-wide', async () => {
    const arrived = await changes('arrived', a, b);
    const departed = await changes('departed', a, b);
    const { ann1, ann2, bob, expected } = await twoTabsAndBob('room:r', [a.url], [b.url], [b.url]);
    clients.push(ann1, ann2, bob);
    await eventually(async () => Object.keys(await presenceOf(ann1, 'room:r')).length === 3, { what: 'three listed' });
    expect(await presenceOf(ann1, 'room:r')).to.deep.equal(expected);
    expect(await presenceOf(bob, 'room:r')).to.deep.equal(expected);
    // The digest the script keeps is the one the client library computes from the ids.
    expect(await result(b, 'presence_stats', { channel: 'room:r' })).to.deep.equal({ channel: 'room:r', clients: 3, users: 2, digest: presenceDigest(Object.keys(expected)) });
    expect(await result(a, 'presence', { channel: 'room:r' })).to.deep.equal({ channel: 'room:r', clients: expected });
    await eventually(async () => (await changes('arrived', a, b)) === arrived + 2, { what: 'two arrivals' });
    ann2.close();
    await eventually(async () => (await result(a, 'presence_stats', { channel: 'room:r' })).clients === 2, { what: 'ann2 gone' });
    expect(await changes('departed', a, b)).to.equal(departed);
    ann1.close();
    await eventually(async () => (await changes('departed', a, b)) === departed + 1, { what: 'ann departed' });
    expect(await result(b, 'presence_stats', { channel: 'room:r' })).to.include({ clients: 1, users: 1 });
  });

  it('sends who came and went across nodes as presence_diff frames, in order', async () => {
    const watcher = track(await member(a.url, 'w'));
    await watcher.subscribe('room:order');
    const mover = track(await member(b.url, 'mover', { info: ODD_INFO }));
    // The entry as the mover's node stored it in Redis and the watcher's node read it back.
    expect(await comeAndGo(watcher, mover, 'room:order')).to.deep.equal([
      ['joins', { user: 'mover', info: ODD_INFO }],
      ['leaves', { user: 'mover', info: ODD_INFO }]
    ]);
    expect(named(watcher, 'room:order', 'joins', watcher.welcome.connectionId)).to.equal(true);
  });

  it("takes a killed worker's clients out within 2 s, in a diff on the other node", async () => {
    const on = await addressesByWorker(b.url);
    const watcher = track(await member(a.url, 'wk'));
    await watcher.subscribe('room:kill');
    const doomed = track(await member(b.url, 'doomed', { localAddress: on[2] }));
    const kept = track(await member(b.url, 'kept', { localAddress: on[1] }));
    for (const c of [doomed, kept]) await c.subscribe('room:kill');
    await eventually(async () => Object.keys(await presenceOf(watcher, 'room:kill')).length === 3, { what: 'three listed' });
    const killedAt = Date.now();
    process.kill(b.workerPid(2), 'SIGKILL');
    await eventually(() => named(watcher, 'room:kill', 'leaves', doomed.welcome.connectionId), { what: 'the leave in a diff', timeout: 2000, interval: 20 });
    expect(Date.now() - killedAt).to.be.below(2000);
    expect(Object.keys(await presenceOf(watcher, 'room:kill')).sort()).to.deep.equal([watcher.welcome.connectionId, kept.welcome.connectionId].sort());
    await eventually(async () => (await b.metric('gateway_workers')) === 2, { what: 'the worker restarted', timeout: 15000 });
  });

  it("drops a crashed node's clients after --presence-ttl, in a diff, and never lists them after", async () => {
    const c = await startGateway(args);
    try {
      const watcher = track(await member(a.url, 'w2'));
      await watcher.subscribe('room:crash');
      const ghosts = [];
      for (let i = 0; i < 3; i++) ghosts.push(await member(c.url, `ghost${i % 2}`));
      for (const g of ghosts) await g.subscribe('room:crash');
      await eventually(async () => Object.keys(await presenceOf(watcher, 'room:crash')).length === 4, { what: 'four listed' });
      const departed = await changes('departed', a, b);
      await c.stop(); // SIGKILL, primary and workers
      const crashedAt = Date.now();
      const ids = ghosts.map((g) => g.welcome.connectionId);
      await eventually(async () => Object.keys(await presenceOf(watcher, 'room:crash')).length === 1, { what: 'ghosts expired', timeout: 10000, interval: 100 });
      expect(Date.now() - crashedAt).to.be.below((TTL_S + 2) * 1000);
      await eventually(() => ids.every((id) => named(watcher, 'room:crash', 'leaves', id)), { what: 'the leaves in diffs' });
      await eventually(async () => (await changes('departed', a, b)) === departed + 2, { what: 'two departures, once each' });
      // Never listed again, on either node.
      for (let i = 0; i < 5; i++) {
        expect(await result(i % 2 ? a : b, 'presence', { channel: 'room:crash' })).to.deep.equal({ channel: 'room:crash', clients: { [watcher.welcome.connectionId]: { user: 'w2' } } });
        await sleep(200);
      }
      expect(await changes('departed', a, b)).to.equal(departed + 2);
    } finally {
      await c.stop();
    }
  });

  it('takes a node’s clients out when it stops gracefully (SIGTERM), long before --presence-ttl', async () => {
    const own = args.map((arg, i) => (args[i - 1] === '--presence-ttl' ? '60' : arg));
    const c = await startGateway([...own, '--drain-timeout', '200']);
    try {
      const watcher = track(await member(a.url, 'w3'));
      await watcher.subscribe('room:stop');
      const leaving = await member(c.url, 'leaving');
      await leaving.subscribe('room:stop');
      await eventually(async () => Object.keys(await presenceOf(watcher, 'room:stop')).length === 2, { what: 'two listed' });
      const stoppedAt = Date.now();
      c.signal('SIGTERM');
      expect(await c.exited).to.include({ code: 0 });
      await eventually(async () => Object.keys(await presenceOf(watcher, 'room:stop')).length === 1, { what: 'gone from presence', timeout: 5000 });
      expect(Date.now() - stoppedAt).to.be.below(10000); // the TTL is 60 s: it left, it did not expire
      await eventually(() => named(watcher, 'room:stop', 'leaves', leaving.welcome.connectionId), { what: 'its leave in a diff' });
    } finally {
      await c.stop();
    }
  });

  it('announces every node’s clients again within one refresh after Redis restarted empty, quietly: no join, no arrival', async () => {
    const one = track(await member(a.url, 'one'));
    const two = track(await member(b.url, 'two'));
    await one.subscribe('room:again');
    await two.subscribe('room:again');
    await eventually(async () => (await result(a, 'presence_stats', { channel: 'room:again' })).clients === 2, { what: 'two listed' });
    await eventually(() => named(one, 'room:again', 'joins', two.welcome.connectionId), { what: "two's join" });
    const arrived = await changes('arrived', a, b);
    await redis.stop();
    await redis.start();
    const restartedAt = one.frames.length;
    await eventually(async () => (await result(b, 'presence_stats', { channel: 'room:again' })).clients === 2, { what: 're-announced', timeout: TTL_S * 1000 + 5000 });
    const ids = [one.welcome.connectionId, two.welcome.connectionId];
    expect(await result(a, 'presence_stats', { channel: 'room:again' })).to.include({ users: 2, digest: presenceDigest(ids) });
    // Nothing had been announced, so nothing is: a third client's join is the marker.
    const three = track(await member(b.url, 'three'));
    await three.subscribe('room:again');
    await eventually(() => named(one, 'room:again', 'joins', three.welcome.connectionId), { what: "three's join" });
    await eventually(async () => (await changes('arrived', a, b)) === arrived + 1, { what: "three's arrival" });
    const diffs = one.frames.slice(restartedAt).filter((f) => f.type === 'presence_diff' && f.channel === 'room:again');
    expect(diffs.flatMap((d) => [...Object.keys(d.joins), ...Object.keys(d.leaves)])).to.deep.equal([three.welcome.connectionId]);
  });
});

describe('presence on Redis Cluster (sharded pub/sub)', function () {
  this.timeout(90000);
  let group;
  let gw;
  const clients = [];
  after(async () => {
    for (const client of clients) client.close();
    await gw?.stop();
    await group?.remove();
  });

  it('lists a channel’s clients and sends its diffs from what the script published, on the channel’s own shard', async () => {
    group = await RedisClusterGroup.start();
    gw = await startGateway(['--config', configFile(PRESENCE_NAMESPACES), '--engine', 'redis', '--redis-cluster', group.addresses, '--auth', 'jwt', '--jwt-secret', SECRET]);
    await eventually(async () => (await gw.metric('gateway_engine_up')) === 1, { what: 'the engine up' });
    const watcher = await member(gw.url, 'w');
    const mover = await member(gw.url, 'm', { localAddress: '127.0.0.2' });
    clients.push(watcher, mover);
    await watcher.subscribe('room:cluster');
    expect((await comeAndGo(watcher, mover, 'room:cluster')).map(([side]) => side)).to.deep.equal(['joins', 'leaves']);
    expect(await presenceOf(watcher, 'room:cluster')).to.deep.equal({ [watcher.welcome.connectionId]: { user: 'w' } });
  });
});
