// Three gateway nodes on Redis under Sentinel (a master, a replica, three
// Sentinels), each of them in a network namespace of its own on a private
// bridge (scripts/harness/partition.js), through the faults a deployment
// meets: a silent cut of the master, of one Sentinel and of all three; a
// node cut from Redis past the presence TTL; a failover under publishing,
// and one while a node is cut; a node's death. Every node has a presence
// member (that subscribes to the messages too and keeps its member list from
// a read plus the diffs) and a publisher. After each: every acknowledged
// publish reached every subscriber once and in order in its epoch, the
// member lists equal fresh reads, the occupancy is exact, and /health said
// what was so. It needs root (network namespaces, iptables), as CI has;
// elsewhere the suite is skipped with one line saying why.
import { expect } from 'chai';
import { eventually } from '../../../scripts/harness/gateway.js';
import { unsupported } from '../../../scripts/harness/netns.js';
import { PartitionLab } from '../../../scripts/harness/partition.js';
import { configFile, result } from '../../helpers/api.js';
import { API_KEY, httpPublish, nodeClient } from '../../helpers/client-helpers.js';
import { SECRET, joseHs256 } from '../../helpers/tokens.js';
import { applyDiffs, diffsOf, member, named, presenceOf } from '../../helpers/presence.js';
import { SteadyPublisher, expectAllDelivered, watchHealth } from '../../helpers/through-fault.js';
import { Balancer } from '../../helpers/balancer.js';
import { sleep } from '../../helpers/wait.js';

const TTL_S = 2;
const PROBE = 'plain:probe'; // HTTP publishes that try a node, on a channel no one holds
const CONFIG = { historySize: 5000, namespaces: [{ name: 'room', presence: true, joinLeave: true }, { name: 'plain' }] };

describe('three gateway nodes on Redis under Sentinel, through faults (network namespaces)', function () {
  this.timeout(60000);
  let lab;
  let nodes;
  let balancer;
  const clients = [];
  const track = (client) => (clients.push(client), client);

  /**
   * On each of `on`: a member of the room `room:<tag>` that holds the
   * channels `plain:<tag>-a` and `-b` too, and a publisher to them.
   */
  const fleet = async (on, tag) => {
    const room = `room:${tag}`;
    const channels = [`plain:${tag}-a`, `plain:${tag}-b`];
    const members = [];
    for (const node of on) {
      const client = track(await member(node.url, `m-${node.name}`));
      client.epochs = {};
      for (const channel of channels) client.epochs[channel] = (await client.subscribe(channel)).epoch;
      await client.subscribe(room);
      members.push({ node, client, read: await presenceOf(client, room) });
    }
    const publishers = [];
    for (const node of on) {
      const client = track(await member(node.url, `p-${node.name}`, { publish: ['plain:*'] }));
      publishers.push(new SteadyPublisher(client, channels, `${tag}-${node.name}`));
    }
    await eventually(() => publishers.every((p) => p.acked.length >= 10), { what: 'ten acknowledged publishes on every node' });
    return { room, channels, members, publishers };
  };

  before(async function () {
    const reason = unsupported();
    if (reason !== undefined) {
      console.log(`    skipped: ${reason}`);
      this.skip();
    }
    const args = ['--workers', '1', '--config', configFile(CONFIG), '--auth', 'jwt', '--jwt-secret', SECRET, '--api-key', API_KEY];
    args.push('--presence-ttl', String(TTL_S), '--join-leave-interval', '100', '--member-grace', '300');
    args.push('--redis-wait-replicas', '1', '--redis-wait-timeout', '500', '--max-publish-rate', '100000');
    lab = await PartitionLab.start({ nodes: 3, args, sentinel: true });
    nodes = lab.nodes;
    for (const node of nodes) await eventually(async () => (await node.metric('gateway_engine_up')) === 1, { what: `${node.name}'s engine up` });
  });
  afterEach(() => {
    lab?.healAll();
    for (const client of clients.splice(0)) client.close();
    balancer?.close();
  });
  after(() => lab?.stop());

  it('a silent cut of the master found through the Sentinels: every node degraded within 2 s, refusing at once, acking within 2 s of the heal', async () => {
    const f = await fleet(nodes, 'm');
    const master = await lab.master();
    lab.cutMember(master);
    await Promise.all(nodes.map(degradedWithin2s));
    await Promise.all(nodes.map(refusedAtOnce));
    lab.healMember(master);
    await Promise.all(nodes.map(ackedWithin2s));
    expect(await lab.master(), 'no failover: the cut was shorter than down-after').to.equal(master);
    await expectAfter(f, nodes);
  });

  it('a silent Sentinel is left for the others while publishes go on; with none answering, every node degraded within 2 s, refusing at once, acking within 2 s of the heal', async () => {
    const f = await fleet(nodes, 's');
    const health = nodes.map(watchHealth);
    lab.cutMember('s1');
    const cutAt = Date.now();
    const sentinel = `${lab.net.address('s1')}:26379`;
    const silent = (l) => l.msg === 'redis engine: a Sentinel does not answer; failovers are heard through the others' && l.sentinel === sentinel;
    await Promise.all(nodes.map((node) => node.waitForLog(silent, 5000)));
    // Past the teardown of the silent Sentinel's connections: still acking everywhere.
    await eventually(() => Date.now() > cutAt + 3000 && f.publishers.every((p) => p.ackedSince(cutAt + 2500) >= 10), { what: 'acks on every node with one Sentinel cut' });
    for (const [i, watch] of health.entries()) expect(watch.seen, `${nodes[i].name}'s /health with one Sentinel cut`).to.deep.equal(['ok']);
    for (const watch of health) watch.stop();

    lab.cutMember('s2');
    lab.cutMember('s3');
    await Promise.all(nodes.map(degradedWithin2s));
    await Promise.all(nodes.map(refusedAtOnce));
    for (const member of ['s1', 's2', 's3']) lab.healMember(member);
    await Promise.all(nodes.map(ackedWithin2s));
    for (const node of nodes) expect(node.logs.some((l) => l.msg.startsWith('redis engine: Redis unreachable') && l.reason === 'no Sentinel answers'), `${node.name}'s log`).to.equal(true);
    await expectAfter(f, nodes);
  });

  it('a node cut from Redis past the presence TTL: it alone is degraded, its members leave elsewhere and come back, nothing acknowledged lost', async () => {
    const [n1, n2, n3] = nodes;
    const f = await fleet(nodes, 'b');
    await expectListsExact(f, 3);
    const health = nodes.map(watchHealth);
    const gone = f.members[0].client.welcome.connectionId;
    lab.cut(n1);
    const cutAt = Date.now();
    await degradedWithin2s(n1);
    await refusedAtOnce(n1);
    for (const { client } of f.members.slice(1)) {
      await eventually(() => named(client, f.room, 'leaves', gone), { timeout: TTL_S * 1000 + 5000, what: "n1's member leaving on the others" });
    }
    await sleep(cutAt + TTL_S * 1000 + 1000 - Date.now()); // a cut longer than the TTL, whatever the sweep's timing
    lab.heal(n1);
    const healedAt = Date.now();
    await ackedWithin2s(n1);
    for (const { client } of f.members.slice(1)) {
      await eventually(() => diffsOf(client, f.room).findLast((d) => Object.hasOwn(d.joins, gone) || Object.hasOwn(d.leaves, gone)).joins[gone], {
        what: "n1's member back on the others"
      });
    }
    await eventually(() => f.publishers[0].ackedSince(healedAt) >= 10, { what: 'n1 acking again' });
    for (const watch of health) watch.stop();
    expect(health[0].seen).to.include('degraded');
    expect(health[0].changes.at(-1).status).to.equal('ok');
    for (const [i, node] of [n2, n3].entries()) expect(health[i + 1].seen, `${node.name}'s /health`).to.deep.equal(['ok']);
    expect(named(f.members[0].client, f.room, 'leaves', gone), 'a member told of its own departure').to.equal(false);
    await expectAfter(f, nodes);
  });

  it('a Sentinel failover during publishing: every node follows the new master, the epoch kept, nothing acknowledged lost, doubled or out of order', async () => {
    const f = await fleet(nodes, 'c');
    const failovers = await Promise.all(nodes.map((node) => node.metric('gateway_engine_failovers_total')));
    const before = await lab.master();
    expect(await lab.failover()).to.not.equal(before);
    const doneAt = Date.now();
    await eventually(() => f.publishers.every((p) => p.ackedSince(doneAt) >= 10), { timeout: 20000, what: 'every node acking on the new master' });
    for (const [i, node] of nodes.entries()) {
      expect(await node.metric('gateway_engine_failovers_total'), `${node.name}'s failovers`).to.be.above(failovers[i]);
      expect((await node.request('/health')).body.status).to.equal('ok');
    }
    await expectAfter(f, nodes);
  });

  it('a Sentinel failover while a node is cut: the node follows the new master once healed, nothing acknowledged lost', async () => {
    const [n1] = nodes;
    const f = await fleet(nodes, 'd');
    lab.cut(n1);
    await degradedWithin2s(n1);
    await lab.failover();
    const doneAt = Date.now();
    await eventually(() => f.publishers.slice(1).every((p) => p.ackedSince(doneAt) >= 10), { timeout: 20000, what: 'the other nodes acking on the new master' });
    await refusedAtOnce(n1);
    lab.heal(n1);
    await ackedWithin2s(n1);
    await expectAfter(f, nodes);
  });

  it("a node SIGKILLed under load: its member leaves everywhere within the TTL, its clients reconnect to the others and recover what they missed", async () => {
    const [n1, n2, n3] = nodes;
    const channels = ['plain:a-a', 'plain:a-b']; // fleet()'s, held before its first publish
    // A client of the client library, on n3 through a balancer that moves it to n1 once n3 is out of service.
    balancer = await Balancer.start([n3.port, n1.port, n2.port], new URL(n3.url).pathname);
    const roamer = track(nodeClient(balancer.url, { token: await joseHs256({ sub: 'roamer', subscribe: ['plain:*'] }) }));
    const got = Object.fromEntries(channels.map((channel) => [channel, []]));
    const gaps = [];
    const states = [];
    roamer.on('gap', (gap) => gaps.push(gap));
    roamer.on('state', (state) => states.push(state));
    for (const channel of channels) await roamer.subscribe(channel, (data, { seq }) => got[channel].push({ seq, data }));
    const f = await fleet(nodes, 'a');
    const health = [n1, n2].map(watchHealth);
    await eventually(() => f.channels.every((channel) => got[channel].length >= 10), { what: "the roamer's messages through n3" });

    const gone = f.members[2].client.welcome.connectionId;
    const killedAt = Date.now();
    await n3.stop();
    balancer.out(n3.port);
    await f.publishers[2].stop();
    for (const { client } of f.members.slice(0, 2)) {
      await eventually(() => named(client, f.room, 'leaves', gone), { timeout: TTL_S * 1000 + 3000, what: "n3's member leaving on the others within the TTL" });
    }
    await eventually(() => states.includes('reconnecting') && states.at(-1) === 'open', { what: 'the roamer back, on another node' });
    await eventually(() => f.publishers.slice(0, 2).every((p) => p.ackedSince(killedAt) >= 10), { what: 'acks on the others' });
    for (const watch of health) watch.stop();
    for (const [i, watch] of health.entries()) expect(watch.seen, `${nodes[i].name}'s /health`).to.deep.equal(['ok']);
    const live = { ...f, members: f.members.slice(0, 2) };
    const roamed = { messages: (channel) => got[channel] };
    await expectAfter(live, [n1, n2], { extra: [roamed], occupancy: 3 });
    expect(gaps).to.deep.equal([]);
  });

  /** Every acknowledged publish at every subscriber once and in order, member lists and occupancy exact, on `on`. */
  async function expectAfter(f, on, { extra = [], occupancy = f.members.length } = {}) {
    await Promise.all(f.publishers.map((p) => p.stop()));
    const acked = f.publishers.flatMap((p) => p.acked);
    await expectAllDelivered(
      f.members.map((m) => m.client),
      acked,
      { sameEpoch: true }
    );
    if (extra.length > 0) await expectAllDelivered(extra, acked, { sameEpoch: false });
    await expectListsExact(f, f.members.length);
    for (const node of on) {
      await eventually(
        async () => {
          const { channels } = await result(node, 'channels', { prefix: f.channels[0].slice(0, -1) });
          return f.channels.every((channel) => channels[channel]?.subscribers === occupancy);
        },
        { what: `occupancy ${occupancy} on ${node.name}` }
      );
    }
  }
});

/** Every member's list, kept from its read plus the diffs, equals a fresh read of `count` members. */
async function expectListsExact({ room, members }, count) {
  for (const { node, client, read } of members) {
    await eventually(
      async () => {
        const fresh = await presenceOf(client, room);
        return Object.keys(fresh).length === count && JSON.stringify(sorted(applyDiffs(read, diffsOf(client, room)))) === JSON.stringify(sorted(fresh));
      },
      { what: `${node.name}'s member list equal to a fresh read of ${count}` }
    );
  }
}

function degradedWithin2s(node) {
  return eventually(async () => (await node.request('/health')).body.status === 'degraded', { timeout: 2000, interval: 20, what: `${node.name} degraded within 2 s` });
}

async function refusedAtOnce(node) {
  const sentAt = Date.now();
  const headers = { Authorization: `Bearer ${API_KEY}`, 'Content-Type': 'application/json' };
  const refused = await node.request('/publish', { method: 'POST', headers, body: JSON.stringify({ channel: PROBE, data: 'refused' }) });
  expect(refused.status, `${node.name}'s answer`).to.equal(503);
  expect(refused.body.error).to.equal('unavailable');
  expect(Date.now() - sentAt, `${node.name}'s refusal`).to.be.below(1000); // not Redis' 5 s command timeout
}

function ackedWithin2s(node) {
  return eventually(() => httpPublish(node, PROBE, 'healed'), { timeout: 2000, interval: 20, what: `an ack on ${node.name} within 2 s of the heal` });
}

function sorted(list) {
  return Object.fromEntries(Object.entries(list).sort(([x], [y]) => x.localeCompare(y)));
}
