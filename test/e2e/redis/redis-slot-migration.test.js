// A Redis Cluster slot migrated while publishing, with real processes and
// the real commands (IMPORTING/MIGRATING, MIGRATE key by key, NODE): the
// channel's keys and its sharded subscriptions move to the new master, and
// nothing acknowledged is lost, reordered or sent twice. A publish refused
// during the move is counted and sent again by its client.
import { expect } from 'chai';
import { startGateway, eventually } from '../../../scripts/harness/gateway.js';
import { RedisClusterGroup } from '../../../scripts/harness/redis-topologies.js';
import { slotOf } from '../../../lib/engines/redis/connect.js';
import { holdPublishers, holdSubscribers, expectAllDelivered, expectRecovery } from '../../helpers/through-fault.js';

describe('redis engine on Redis Cluster, through a slot migration', function () {
  this.timeout(90000);
  let group;
  let gateways = [];
  const clients = [];
  after(async () => {
    for (const client of clients) client.close();
    await Promise.all(gateways.map((gw) => gw.stop()));
    await group?.remove();
  });

  it('moves a channel to another master while publishing: every acknowledged publish delivered once, in order, in the same epoch', async () => {
    group = await RedisClusterGroup.start();
    // `moved` and a sibling on one master (its pipelines mix the moved slot with one that stays), one channel on each other.
    const moved = 'm0';
    const source = await group.masterOf(`gw:{${moved}}`);
    const byMaster = new Map([[source, [moved]]]);
    for (let i = 1; byMaster.size < 3 || byMaster.get(source).length < 2; i++) {
      const master = await group.masterOf(`gw:{m${i}}`);
      const list = byMaster.get(master) ?? [];
      if (list.length < (master === source ? 2 : 1)) list.push(`m${i}`);
      byMaster.set(master, list);
    }
    const channels = [...byMaster.values()].flat();
    const [, target] = byMaster.keys();
    const args = ['--engine', 'redis', '--redis-cluster', group.addresses, '--redis-wait-replicas', '1', '--redis-wait-timeout', '500', '--max-publish-rate', '100000'];
    gateways = await Promise.all([startGateway(args), startGateway(args)]);
    const [a, b] = gateways;
    await eventually(async () => (await a.metric('gateway_engine_up')) === 1 && (await b.metric('gateway_engine_up')) === 1, { what: 'both engines up' });
    const subscribers = await holdSubscribers(gateways, channels, clients);
    const publishers = await holdPublishers(gateways, channels, clients, { retry: true });
    await eventually(() => publishers.every((p) => p.acked.filter((x) => x.channel === moved).length >= 10), { what: `10 acknowledged publishes each on ${moved}` });

    // Each step of the move waits for both publishers to try two more publishes (one blocked on `moved` keeps retrying it).
    const between = async () => {
      const before = publishers.map((p) => p.attempts);
      await eventually(() => publishers.every((p, i) => p.attempts >= before[i] + 2), { what: 'publishes tried during the move' });
    };
    const movedAt = Date.now();
    await group.migrate(slotOf(`gw:{${moved}}`), target, between);
    expect(await group.masterOf(`gw:{${moved}}`), 'the new owner').to.equal(target);
    const flowing = (p) => p.acked.filter((x) => x.at > movedAt && x.channel === moved).length >= 10;
    await eventually(() => publishers.every(flowing), { timeout: 20000, what: `publishes flowing on ${moved} after the move` });
    await Promise.all(publishers.map((p) => p.stop()));

    const acked = publishers.flatMap((p) => p.acked);
    await expectAllDelivered(subscribers, acked, { sameEpoch: true });
    await expectRecovery(b, acked, clients);
    console.log(`      refused and sent again during the move: ${publishers.map((p) => p.refused).join(', ')}`);
  });
});
