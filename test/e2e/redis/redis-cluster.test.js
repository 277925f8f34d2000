// The Redis engine on Redis Cluster, with real processes: three masters with
// two replicas each, two gateway nodes, channels on every shard through sharded
// pub/sub. Order and recovery per channel, and one shard's master killed:
// its replica takes over and nothing acknowledged is lost.
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { startGateway, eventually } from '../../../scripts/harness/gateway.js';
import { RedisClusterGroup } from '../../../scripts/harness/redis-topologies.js';
import { RedisServer } from '../../../scripts/harness/redis.js';
import { holdPublishers, holdSubscribers, expectAllDelivered, expectRecovery } from '../../helpers/through-fault.js';

describe('redis engine on Redis Cluster', function () {
  this.timeout(90000);
  let group;
  let gateways = [];
  const clients = [];
  after(async () => {
    for (const client of clients) client.close();
    await Promise.all(gateways.map((gw) => gw.stop()));
    await group?.remove();
  });

  it('keeps order and recovery on every shard, and loses nothing acknowledged when one shard fails over', async () => {
    group = await RedisClusterGroup.start();
    // Two channels on each of the three shards.
    const byMaster = new Map();
    for (let i = 0; byMaster.size < 3 || [...byMaster.values()].some((c) => c.length < 2); i++) {
      const master = await group.masterOf(`gw:{k${i}}`);
      const list = byMaster.get(master) ?? [];
      if (list.length < 2) list.push(`k${i}`);
      byMaster.set(master, list);
    }
    const channels = [...byMaster.values()].flat();
    const args = ['--engine', 'redis', '--redis-cluster', group.addresses, '--redis-wait-replicas', '1', '--redis-wait-timeout', '500', '--max-publish-rate', '100000'];
    gateways = await Promise.all([startGateway(args), startGateway(args)]);
    const [a, b] = gateways;
    await eventually(async () => (await a.metric('gateway_engine_up')) === 1 && (await b.metric('gateway_engine_up')) === 1, { what: 'both engines up' });
    const subscribers = await holdSubscribers(gateways, channels, clients);
    const publishers = await holdPublishers(gateways, channels, clients);
    await eventually(() => publishers.every((p) => p.acked.length >= 30), { what: '30 acknowledged publishes each' });

    const [victim] = byMaster.keys();
    const faultAt = Date.now();
    victim.signal('SIGKILL');
    await group.healed();
    const victimChannels = byMaster.get(victim);
    const flowing = (p) => p.acked.filter((x) => x.at > faultAt && victimChannels.includes(x.channel)).length >= 10;
    await eventually(() => publishers.every(flowing), { timeout: 20000, what: "publishes flowing on the failed shard's channels again" });
    await Promise.all(publishers.map((p) => p.stop()));

    const acked = publishers.flatMap((p) => p.acked);
    for (const channel of channels) expect(acked.some((x) => x.channel === channel && x.at > faultAt), `${channel} published after`).to.equal(true);
    await expectAllDelivered(subscribers, acked, { sameEpoch: true });
    await expectRecovery(b, acked, clients);
    expect(await a.metric('gateway_engine_failovers_total'), 'failovers counted').to.be.at.least(1);
  });

  it('refuses, at start and in words, a --redis-cluster seed that is a plain Redis', async () => {
    const plain = await RedisServer.start();
    try {
      const gateway = new URL('../../../bin/gateway.js', import.meta.url).pathname;
      const run = spawnSync(process.execPath, [gateway, '--engine', 'redis', '--redis-cluster', plain.address, '--port', '0', '--metrics-port', '0'], {
        encoding: 'utf8',
        timeout: 20000
      });
      expect(run.status).to.equal(1);
      expect(run.stdout + run.stderr).to.include(`--redis-cluster: ${plain.address} is a Redis without cluster mode`);
    } finally {
      await plain.remove();
    }
  });
});
