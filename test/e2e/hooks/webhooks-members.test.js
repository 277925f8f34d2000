// Member events end to end: presence (the engine's onMember) feeding the
// webhooks' grace, against a real endpoint that checks the signature. A
// user's first client in a presence channel is the member's arrival, a
// second tab is not, the last one's leaving is its departure once the grace
// has passed, and a user back within the grace makes neither; under redis,
// two nodes, the tabs on both, each event once for the cluster.
import { expect } from 'chai';
import { startGateway, eventually } from '../../../scripts/harness/gateway.js';
import { startRedisNodes } from '../../helpers/redis-nodes.js';
import { configFile } from '../../helpers/api.js';
import { SECRET } from '../../helpers/tokens.js';
import { PRESENCE_NAMESPACES, member } from '../../helpers/presence.js';
import { WebhookEndpoint, WEBHOOK_SECRET } from '../../helpers/webhook-endpoint.js';
import { sleep } from '../../helpers/wait.js';

const GRACE_MS = 1000;

for (const engine of ['memory', 'redis']) {
  describe(`webhooks: member events from presence (${engine} engine)`, function () {
    this.timeout(60000);
    let endpoint;
    let nodes = [];
    let redis;
    let clients = [];
    const members = (channel) => endpoint.events.filter((e) => e.channel === channel && e.name.startsWith('member_')).map((e) => `${e.name} ${e.user}`);
    const tab = async (node, user, channel) => {
      const client = await member(node.url, user);
      clients.push(client);
      await client.subscribe(channel);
      return client;
    };

    before(async () => {
      endpoint = await WebhookEndpoint.start();
      const args = ['--config', configFile(PRESENCE_NAMESPACES), '--auth', 'jwt', '--jwt-secret', SECRET];
      args.push('--webhook-url', endpoint.url, '--webhook-secret', WEBHOOK_SECRET, '--member-grace', String(GRACE_MS));
      if (engine === 'memory') nodes = [await startGateway(args)];
      else ({ redis, nodes } = await startRedisNodes(args));
    });
    afterEach(() => {
      for (const client of clients) client.close();
      clients = [];
    });
    after(async () => {
      await Promise.all(nodes.map((node) => node.stop()));
      await redis?.remove();
      endpoint?.close();
    });

    it('announces a user once for several tabs, and its departure a grace after the last tab left', async () => {
      const [a, b = a] = nodes;
      const first = await tab(a, 'ann', 'room:1');
      await eventually(() => members('room:1').length === 1, { what: 'member_added' });
      const second = await tab(b, 'ann', 'room:1');
      await tab(b, 'bob', 'room:1');
      await eventually(() => members('room:1').length === 2, { what: "bob's member_added" });
      first.close();
      const leftAt = Date.now();
      second.close();
      await eventually(() => members('room:1').length === 3, { what: "ann's member_removed", timeout: 10000 });
      expect(Date.now() - leftAt, 'removed only after the grace').to.be.at.least(GRACE_MS);
      expect(members('room:1')).to.deep.equal(['member_added ann', 'member_added bob', 'member_removed ann']);
      expect(endpoint.badSignatures).to.equal(0);
    });

    it('announces nothing for a user who leaves and comes back within the grace', async () => {
      const [a, b = a] = nodes;
      const first = await tab(a, 'cat', 'room:2');
      await eventually(() => members('room:2').length === 1, { what: 'member_added' });
      first.close();
      await tab(b, 'cat', 'room:2'); // back, on the other node under redis
      // An occupied/vacated pair on another channel, sent after the grace: the member events would be in by then.
      await sleep(GRACE_MS + 500);
      const marker = await tab(a, 'dan', 'plain:2');
      marker.close();
      await eventually(() => endpoint.namesOn('plain:2').length === 2, { what: 'the marker channel occupied and vacated' });
      expect(members('room:2')).to.deep.equal(['member_added cat']);
    });
  });
}
