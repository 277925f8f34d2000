// A Pusher app's own webhook targets, each with the events it asked for, in
// Pusher's format (verified by the `pusher` SDK's own webhook check):
// subscription_count (at most once per channel per 5 s) and client_event
// (channel, event, data, socket_id, user_id on presence channels); and
// subscriptionCount, which sends pusher_internal:subscription_count to the
// channel's subscribers (pusher-js's pusher:subscription_count). Real
// gateway (2 workers), real pusher-js.
import { expect } from 'chai';
import { startGateway } from '../../../scripts/harness/gateway.js';
import { configFile } from '../../helpers/api.js';
import { connected, eventually, pusherClient, pusherWebhookEndpoint, subscribed } from '../../helpers/pusher.js';

const APP = { appId: 'hooked', key: 'hooked-key', secret: 'hooked-app-secret-0123' };

describe('Pusher app webhooks', function () {
  this.timeout(60000);
  let gw, counts, occupancy;
  const clients = [];
  const track = (client) => (clients.push(client), client);

  before(async () => {
    counts = await pusherWebhookEndpoint(APP);
    occupancy = await pusherWebhookEndpoint(APP);
    const app = {
      ...APP,
      clientEvents: true,
      subscriptionCount: true,
      webhooks: [
        { url: counts.url, events: ['subscription_count', 'client_event'] },
        { url: occupancy.url, events: ['channel_occupied', 'channel_vacated'] }
      ]
    };
    gw = await startGateway(['--config', configFile({ pusherApps: [app], memberGrace: 0 })]);
  });
  after(async () => {
    for (const client of clients) client.disconnect();
    await gw?.stop();
    counts?.server.close();
    occupancy?.server.close();
  });

  it('sends subscription_count at most once per channel per 5 s, with the cluster count, and only to the target that asked', async () => {
    const first = track(pusherClient(gw, { app: APP }));
    const { channel } = await subscribed(first, 'news');
    const told = [];
    channel.bind('pusher:subscription_count', (data) => told.push(data.subscription_count));
    await eventually(() => counts.events.some((e) => e.name === 'subscription_count' && e.channel === 'news'), { what: 'the first count' });
    const firstAt = Date.now();
    expect(counts.events.find((e) => e.name === 'subscription_count')).to.deep.include({ channel: 'news', subscription_count: 1 });
    // Two more subscribers (on either worker) within the 5 s.
    for (let i = 0; i < 2; i++) await subscribed(track(pusherClient(gw, { app: APP })), 'news');
    await eventually(() => counts.events.filter((e) => e.name === 'subscription_count').length === 2, { what: 'the second count', timeout: 10000 });
    // Held back: without the 5 s the second count would follow the subscribes within milliseconds.
    // Measured between arrivals, each delayed by its own batch and POST (over a second apart on a loaded machine).
    expect(Date.now() - firstAt).to.be.at.least(3000);
    expect(counts.events.filter((e) => e.name === 'subscription_count').map((e) => e.subscription_count)).to.deep.equal([1, 3]);
    await eventually(() => told.includes(3), { what: 'pusher:subscription_count 3 at the first client' });
    expect(channel.subscriptionCount).to.equal(3);
    expect(occupancy.events.some((e) => e.name === 'subscription_count')).to.equal(false);
    expect(occupancy.events.find((e) => e.name === 'channel_occupied')).to.deep.include({ channel: 'news' });
    expect(counts.events.some((e) => e.name === 'channel_occupied')).to.equal(false);
    expect(counts.refused + occupancy.refused).to.equal(0);
  });

  it('sends client_event with channel, event, data, socket_id and the presence user_id', async () => {
    const sender = track(pusherClient(gw, { app: APP, member: { user_id: 'ann', user_info: {} } }));
    const socketId = await connected(sender);
    const { channel } = await subscribed(sender, 'presence-room');
    channel.trigger('client-typing', { at: 1 });
    const event = await eventually(() => counts.events.find((e) => e.name === 'client_event'), { what: 'client_event' });
    expect(event).to.deep.include({ channel: 'presence-room', event: 'client-typing', socket_id: socketId, user_id: 'ann' });
    expect(JSON.parse(event.data)).to.deep.equal({ at: 1 });
    // Presence channels have no count of their own.
    expect(counts.events.some((e) => e.name === 'subscription_count' && e.channel === 'presence-room')).to.equal(false);
  });
});
