// A node whose subscriber connection to Redis drops comes back exact: two
// gateway nodes on one real redis-server, every pub/sub connection killed
// (CLIENT KILL TYPE pubsub) again and again while clients join and leave a
// presence channel on node 2 and messages are published. After each kill,
// every member list kept from one read plus every presence_diff (native) or
// member_added/member_removed (pusher-js) equals a fresh read on both nodes,
// and every acknowledged publish reached the subscribers on node 1 once and
// in order. The same on Redis Cluster, killing the channel's shard's
// subscriber connections.
import { expect } from 'chai';
import { startRedisNodes } from '../../helpers/redis-nodes.js';
import { startGateway } from '../../../scripts/harness/gateway.js';
import { RedisClusterGroup } from '../../../scripts/harness/redis-topologies.js';
import { configFile, result } from '../../helpers/api.js';
import { API_KEY } from '../../helpers/client-helpers.js';
import { SECRET } from '../../helpers/tokens.js';
import { PRESENCE_NAMESPACES, applyDiffs, diffsOf, member } from '../../helpers/presence.js';
import { APP, connected, eventually, pusherClient, serverSdk, subscribed } from '../../helpers/pusher.js';

const KILLS = 5;
const MOVERS = 6; // clients that join and leave on node 2 around each kill
const SETTLED_MS = 5000; // a kill, the reconnect (about 100 ms), then at most 2 s to resync: room for a busy machine

describe('a subscriber connection killed again and again (redis engine, two nodes)', function () {
  this.timeout(120000);
  let redis;
  let a;
  let b;
  const closers = [];

  before(async () => {
    const config = configFile({ ...PRESENCE_NAMESPACES, pusherApps: [APP] });
    const own = ['--workers', '1', '--config', config, '--auth', 'jwt', '--jwt-secret', SECRET, '--api-key', API_KEY, '--join-leave-interval', '50'];
    ({ redis, nodes: [a, b] } = await startRedisNodes(own));
  });
  afterEach(() => {
    for (const close of closers.splice(0)) close();
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await redis?.remove();
  });

  const killSubscribers = () => redis.command('CLIENT', 'KILL', 'TYPE', 'pubsub');

  it('keeps every native member list kept from a read plus the diffs equal to a fresh read, and every message once and in order', async () => {
    await nativeRounds([a, b], 'room:k', killSubscribers, closers);
  });

  it('keeps pusher-js member lists equal to the users on both nodes', async () => {
    const name = 'presence-k';
    const watcher = pusherClient(a, { member: { user_id: 'watcher' } });
    closers.push(() => watcher.disconnect());
    await connected(watcher);
    const { channel } = await subscribed(watcher, name);
    const users = async (gw) => (await (await serverSdk(gw).get({ path: `/channels/${name}/users` })).json()).users.map((u) => u.id).sort();
    const keptUsers = () => {
      const ids = [];
      channel.members.each((m) => ids.push(m.id));
      return ids.sort();
    };
    const present = [];
    for (let round = 0; round < KILLS; round++) {
      const movers = [...Array(MOVERS)].map((_, i) => pusherClient(b, { member: { user_id: `p${round}.${i}` } }));
      closers.push(...movers.map((m) => () => m.disconnect()));
      await Promise.all(movers.map(connected));
      const joined = movers.map((m) => subscribed(m, name));
      for (const m of present.splice(0, 2)) m.disconnect();
      await killSubscribers();
      await Promise.all(joined);
      for (const m of movers.slice(0, 3)) m.unsubscribe(name);
      present.push(...movers.slice(3));
      await eventually(
        async () => {
          const [onA, onB] = [await users(a), await users(b)];
          return sameList(keptUsers(), onA) && sameList(onA, onB) && onA.length === 1 + present.length;
        },
        { what: `round ${round}: pusher-js's members equal the users on both nodes`, timeout: SETTLED_MS, interval: 100 }
      );
    }
  });
});


describe('a sharded subscriber connection killed again and again (redis engine on Redis Cluster, two nodes)', function () {
  this.timeout(120000);
  let group;
  let nodes = [];
  const closers = [];

  before(async () => {
    group = await RedisClusterGroup.start();
    const args = ['--workers', '1', '--config', configFile(PRESENCE_NAMESPACES), '--engine', 'redis', '--redis-cluster', group.addresses, '--auth', 'jwt', '--jwt-secret', SECRET, '--api-key', API_KEY, '--join-leave-interval', '50'];
    nodes = await Promise.all([startGateway(args), startGateway(args)]);
    for (const node of nodes) await eventually(async () => (await node.metric('gateway_engine_up')) === 1, { what: 'the engine up' });
  });
  after(async () => {
    for (const close of closers.splice(0)) close();
    await Promise.all(nodes.map((node) => node.stop()));
    await group?.remove();
  });

  it("resyncs after ioredis replaces the channel's shard subscriber: the same lists and messages", async () => {
    const channel = 'room:shard';
    const kill = async () => (await group.masterOf(`gw:{${channel}}`)).command('CLIENT', 'KILL', 'TYPE', 'pubsub');
    await nativeRounds(nodes, channel, kill, closers);
  });
});

/**
 * Clients join and leave `channel` on node 2 and messages are published
 * there while `kill` cuts subscriber connections, KILLS times; after each,
 * a watcher's list on each node (one read plus every diff) equals a fresh
 * read on both, and at the end every acknowledged message reached both
 * watchers once and in order.
 */
async function nativeRounds([a, b], channel, kill, closers) {
  const watchers = [];
  for (const [gw, user] of [[a, 'w1'], [b, 'w2']]) {
    const watcher = await member(gw.url, user);
    closers.push(() => watcher.close());
    expect(await watcher.subscribe(channel)).to.include({ type: 'ack' });
    const answer = await watcher.request({ type: 'presence', channel });
    watchers.push({ watcher, read: answer.clients, from: watcher.frames.indexOf(answer) });
  }
  const kept = ({ watcher, read, from }) => applyDiffs(read, diffsOf({ frames: watcher.frames.slice(from + 1) }, channel));
  const acked = [];
  const present = [];
  for (let round = 0; round < KILLS; round++) {
    const movers = await Promise.all([...Array(MOVERS)].map((_, i) => member(b.url, `m${round}.${i}`)));
    closers.push(...movers.map((m) => () => m.close()));
    // Joins, leaves and publishes sent around the kill, none awaited before it.
    for (const m of movers) m.send({ type: 'subscribe', channel, id: 1 });
    const leaving = present.splice(0, 2);
    for (const m of leaving) m.close();
    const publishes = [...Array(4)].map((_, i) => result(b, 'publish', { channel, data: { round, i } }));
    await kill();
    for (const m of movers.slice(0, 2)) m.send({ type: 'unsubscribe', channel, id: 2 });
    for (const m of movers.slice(2, 4)) m.close();
    present.push(...movers.slice(4));
    acked.push(...(await Promise.all(publishes)));
    await Promise.all(movers.slice(0, 2).map((m) => m.next((f) => f.id === 2)));
    await eventually(
      async () => {
        const fresh = [await result(a, 'presence', { channel }), await result(b, 'presence', { channel })].map((r) => r.clients);
        return fresh.every((read) => watchers.every((w) => sameMembers(kept(w), read)));
      },
      { what: `round ${round}: the kept lists equal fresh reads on both nodes`, timeout: SETTLED_MS, interval: 100 }
    );
  }
  const expected = acked.map((r) => r.seq).sort((x, y) => x - y);
  for (const { watcher } of watchers) {
    await eventually(() => watcher.messages(channel).length >= expected.length, { what: 'every acknowledged message' });
    const seqs = watcher.messages(channel).map((f) => f.seq);
    expect(seqs).to.deep.equal(expected); // once each, in order, nothing else
  }
}

function sameMembers(x, y) {
  return JSON.stringify(Object.entries(x).sort()) === JSON.stringify(Object.entries(y).sort());
}

function sameList(x, y) {
  return JSON.stringify(x) === JSON.stringify(y);
}
