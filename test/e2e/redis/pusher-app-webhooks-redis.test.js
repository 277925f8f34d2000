// subscription_count on two gateway nodes sharing one Redis: subscribers on
// both nodes within 5 s make one webhook for the cluster, with the cluster's
// count, verified by the `pusher` SDK's webhook check.
import { expect } from 'chai';
import { configFile } from '../../helpers/api.js';
import { startRedisNodes } from '../../helpers/redis-nodes.js';
import { eventually, pusherClient, pusherWebhookEndpoint, subscribed } from '../../helpers/pusher.js';

const APP = { appId: 'hooked', key: 'hooked-key', secret: 'hooked-app-secret-0123' };

describe('Pusher subscription_count on two Redis nodes', function () {
  this.timeout(60000);
  let cluster, endpoint;
  const clients = [];

  before(async () => {
    endpoint = await pusherWebhookEndpoint(APP);
    const app = { ...APP, subscriptionCount: true, webhooks: [{ url: endpoint.url, events: ['subscription_count'] }] };
    cluster = await startRedisNodes(['--config', configFile({ pusherApps: [app] })]);
  });
  after(async () => {
    for (const client of clients) client.disconnect();
    await Promise.all(cluster?.nodes.map((node) => node.stop()) ?? []);
    await cluster?.redis.stop();
    endpoint?.server.close();
  });

  it('sends one webhook for the cluster per window, with the count of both nodes', async () => {
    const [a, b] = cluster.nodes;
    const made = [a, b].map((node) => pusherClient(node, { app: APP }));
    clients.push(...made);
    await Promise.all(made.map((client) => subscribed(client, 'news')));
    const counts = () => endpoint.events.filter((e) => e.name === 'subscription_count' && e.channel === 'news');
    await eventually(() => counts().length >= 1, { what: 'a subscription_count' });
    // Both nodes saw a change within the window: one webhook for the cluster, not one per node.
    const marker = Date.now() + 4000;
    await eventually(() => Date.now() >= marker, { what: '4 s into the window', timeout: 6000, interval: 250 });
    expect(counts()).to.have.length(1);
    // The next window's, if the first was counted before the second node's subscriber, carries the cluster's 2.
    await eventually(() => counts().some((e) => e.subscription_count === 2), { what: 'the count of both nodes', timeout: 15000 });
    expect(endpoint.refused).to.equal(0);
  });
});
