// The Redis engine on Redis Cluster under a silent cut: three masters and
// two gateway nodes, each in a network namespace of its own
// (scripts/harness/partition.js), one master's packets dropped both ways (no
// FIN, no RST) for a few seconds, then let through again. Each node's
// connection to that master and its sharded subscriber there have a
// heartbeat: the cut is told at once, and the shard's channels are caught up
// once it heals. It needs root (network namespaces, iptables), as CI has;
// elsewhere the suite is skipped with one line saying why.
import { expect } from 'chai';
import { eventually } from '../../../scripts/harness/gateway.js';
import { unsupported } from '../../../scripts/harness/netns.js';
import { PartitionLab } from '../../../scripts/harness/partition.js';
import { TestClient } from '../../helpers/client.js';
import { expectAllDelivered, holdPublishers, holdSubscribers } from '../../helpers/through-fault.js';

const CUT_MS = 3000;

describe('redis engine on Redis Cluster, one master cut silently (network namespaces)', function () {
  this.timeout(90000);
  let lab;
  const clients = [];

  before(async function () {
    const reason = unsupported();
    if (reason !== undefined) {
      console.log(`    skipped: ${reason}`);
      this.skip();
    }
    lab = await PartitionLab.start({ cluster: true, args: ['--workers', '1', '--max-publish-rate', '100000'] });
  });
  after(async () => {
    for (const client of clients) client.close();
    await lab?.stop();
  });

  it('is degraded within 2 s of the cut, refuses publishes at once while it lasts, acks within 2 s of the heal, and loses, doubles or reorders nothing acked on any shard', async () => {
    // A channel on each master.
    const byMaster = new Map();
    for (let i = 0; byMaster.size < 3; i++) {
      const master = await lab.masterOf(`gw:{k${i}}`);
      if (!byMaster.has(master)) byMaster.set(master, `k${i}`);
    }
    const channels = [...byMaster.values()];
    const { nodes } = lab;
    await eventually(async () => (await Promise.all(nodes.map((node) => node.metric('gateway_engine_up')))).every((up) => up === 1), { what: 'both engines up' });
    const subscribers = await holdSubscribers(nodes, channels, clients);
    const publishers = await holdPublishers(nodes, channels, clients);
    await eventually(() => publishers.every((p) => p.acked.length >= 20), { what: '20 acknowledged publishes each' });

    const [victim, victimChannel] = [...byMaster][1];
    const probes = await Promise.all(nodes.map((node) => TestClient.connect(node.url)));
    clients.push(...probes);
    const cutAt = Date.now();
    lab.cutMember(victim);
    await Promise.all(
      nodes.map((node) => eventually(async () => (await node.request('/health')).body.status === 'degraded', { timeout: 2000, what: `${node.name} degraded within 2 s` }))
    );
    const degradedAt = Date.now();
    for (const [i, node] of nodes.entries()) {
      expect(await node.metric('gateway_engine_up'), node.name).to.equal(0);
      // Refused at once, not after a command timeout, on the cut master's shard and on the others.
      for (const channel of channels) {
        const askedAt = Date.now();
        const reply = await probes[i].publish(channel, { id: `refused-${channel}` });
        expect(reply, `${node.name} ${channel}`).to.include({ type: 'error', code: 'unavailable' });
        expect(Date.now() - askedAt).to.be.below(1000);
      }
    }
    await new Promise((resolve) => setTimeout(resolve, cutAt + CUT_MS - Date.now()));

    lab.healMember(victim);
    const healedAt = Date.now();
    await Promise.all(
      nodes.map((node, i) =>
        eventually(async () => (await probes[i].publish(victimChannel, { id: `healed-${node.name}` })).type === 'ack', {
          timeout: 2000,
          interval: 20,
          what: `${node.name} acking on the cut shard within 2 s of the heal`
        })
      )
    );
    await eventually(() => publishers.every((p) => p.acked.filter((a) => a.at > healedAt && a.channel === victimChannel).length >= 10), {
      what: "publishes flowing on the cut shard's channel again"
    });
    await Promise.all(publishers.map((p) => p.stop()));

    const acked = publishers.flatMap((p) => p.acked);
    // Until the cut is noticed the other shards ack on; once it is, nothing does (a publish answered past a second is no answer in flight).
    expect(acked.filter((a) => a.at > degradedAt + 1000 && a.at < healedAt), 'acked while degraded').to.deep.equal([]);
    // The shard kept its keys: the same epochs, and every ack at every subscriber on both nodes, in order and once.
    await expectAllDelivered(subscribers, acked, { sameEpoch: true });
    const lines = (node, msg) => node.logs.filter((l) => l.msg.startsWith(msg)).length;
    for (const node of nodes) {
      await eventually(() => lines(node, 'redis engine: Redis answers again') === 1, { what: `${node.name}: the line saying Redis answers again` });
      expect(lines(node, 'redis engine: Redis unreachable'), node.name).to.equal(1);
    }
  });
});
