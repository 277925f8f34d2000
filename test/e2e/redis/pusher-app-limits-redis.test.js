// A Pusher app's connection quota and backend events per second counted
// across two gateway nodes sharing one Redis (the limits themselves:
// ./pusher-app-limits.test.js).
import { expect } from 'chai';
import { configFile } from '../../helpers/api.js';
import { startRedisNodes } from '../../helpers/redis-nodes.js';
import { eventually, serverSdk } from '../../helpers/pusher.js';
import { LIMITED, open, status } from '../../helpers/pusher-limits.js';

describe('Pusher app limits on two Redis nodes', function () {
  this.timeout(60000);
  let cluster;
  const raws = [];

  before(async () => {
    cluster = await startRedisNodes(['--config', configFile({ pusherApps: [LIMITED] })]);
  });
  after(async () => {
    for (const raw of raws) raw.close();
    await Promise.all(cluster?.nodes.map((node) => node.stop()) ?? []);
    await cluster?.redis.stop();
  });

  it('counts the app\'s connections and backend events across the nodes', async () => {
    const [a, b] = cluster.nodes;
    for (const node of [a, a, b]) {
      const { raw, result } = await open(node);
      raws.push(raw);
      expect(result).to.equal('established');
    }
    for (const node of [a, b]) {
      const { raw, result } = await open(node);
      raws.push(raw);
      expect(result).to.equal(4004);
    }
    const sdks = [serverSdk(a, LIMITED), serverSdk(b, LIMITED)];
    await eventually(async () => {
      const second = Math.floor(Date.now() / 1000);
      const statuses = [];
      for (const sdk of [sdks[0], sdks[1], sdks[0]]) statuses.push(await status(sdk.trigger(['a', 'b'], 'rated', {})));
      return Math.floor(Date.now() / 1000) === second && JSON.stringify(statuses) === '[200,200,429]';
    }, { what: 'three calls on two nodes within one second: 200, 200, 429' });
  });
});
