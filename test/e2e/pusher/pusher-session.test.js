// Pusher's way in on the one session core, on a real gateway (2 workers,
// memory engine): a join cancelled by an unsubscribe leaves nothing, the
// member cap and --max-subscriptions hold under a burst, a presence channel
// counts once, a channel already held is answered again, refusals name the
// channel as the client did, and native and Pusher webhooks are both told.
import { expect } from 'chai';
import WebSocket from 'ws';
import { startGateway } from '../../../scripts/harness/gateway.js';
import { configFile } from '../../helpers/api.js';
import { WebhookEndpoint, WEBHOOK_SECRET } from '../../helpers/webhook-endpoint.js';
import { APP, eventually, pusherWebhookEndpoint, RawPusher, serverSdk } from '../../helpers/pusher.js';
import { presenceRush, signedSubscribe, subscribeAnswer } from '../../helpers/pusher-session.js';

const MAX_SUBSCRIPTIONS = 10;
const MAX_MEMBERS = 3;

describe('Pusher on the session core', function () {
  this.timeout(60000);
  let gw;
  let sdk;
  let native;
  let pusher;
  const raws = [];
  const open = async () => {
    const raw = await RawPusher.open(gw);
    raws.push(raw);
    return { raw, socketId: await raw.socketId() };
  };

  before(async () => {
    native = await WebhookEndpoint.start();
    pusher = await pusherWebhookEndpoint();
    const file = configFile({ pusherApps: [{ ...APP, clientEvents: true, maxPresenceMembers: MAX_MEMBERS, webhookUrl: pusher.url }] });
    gw = await startGateway([
      '--config',
      file,
      '--balance',
      'even',
      '--max-subscriptions',
      String(MAX_SUBSCRIPTIONS),
      '--webhook-url',
      native.url,
      '--webhook-secret',
      WEBHOOK_SECRET
    ]);
    sdk = serverSdk(gw);
  });
  after(async () => {
    for (const raw of raws) raw.close();
    await gw?.stop();
    native?.close();
    pusher?.server.close();
  });

  const users = async (channel) => (await (await sdk.get({ path: `/channels/${channel}/users` })).json()).users.map((u) => u.id);

  it('leaves no member, subscription or answer behind when an unsubscribe follows a presence subscribe at once', async () => {
    const { raw, socketId } = await open();
    // Both frames in one write: the unsubscribe arrives while the join waits for the engine.
    raw.ws.send(JSON.stringify(signedSubscribe(socketId, 'presence-obs', 'ghost')));
    raw.ws.send(JSON.stringify({ event: 'pusher:unsubscribe', data: { channel: 'presence-obs' } }));
    // The same path to a marker channel, then an event to each: the marker's comes, the other's must not.
    raw.send(signedSubscribe(socketId, 'presence-marker', 'ghost'));
    expect((await subscribeAnswer(raw, 'presence-marker')).event).to.equal('pusher_internal:subscription_succeeded');
    await sdk.trigger('presence-obs', 'after', { n: 1 });
    await sdk.trigger('presence-marker', 'after', { n: 2 });
    await raw.event('after', 'presence-marker');
    expect(raw.frames.filter((f) => f.channel === 'presence-obs')).to.deep.equal([]);
    expect(await users('presence-obs')).to.deep.equal([]);
    const info = await (await sdk.get({ path: '/channels/presence-obs', params: { info: 'subscription_count' } })).json();
    expect(info).to.deep.equal({ occupied: false, subscription_count: 0 });
  });

  it('lets exactly maxPresenceMembers users in when more subscribe at the same moment', async () => {
    const { raws: rushed, answers } = await presenceRush([gw], 8, 'presence-rush');
    raws.push(...rushed);
    const succeeded = answers.filter((a) => a.event === 'pusher_internal:subscription_succeeded');
    const refused = answers.filter((a) => a.event === 'pusher:subscription_error');
    expect(succeeded).to.have.length(MAX_MEMBERS);
    expect(refused.map((a) => a.data.status)).to.deep.equal([403, 403, 403, 403, 403]);
    expect(refused[0].data.error).to.match(/presence-rush has its 3 members/);
    expect(await users('presence-rush')).to.have.length(MAX_MEMBERS);
  });

  it('holds --max-subscriptions for a burst of presence subscribes, each presence channel counted once', async () => {
    const { raw, socketId } = await open();
    const channels = Array.from({ length: MAX_SUBSCRIPTIONS + 5 }, (_, i) => `presence-cap-${i}`);
    for (const channel of channels) raw.send(signedSubscribe(socketId, channel, 'capped'));
    const answers = await Promise.all(channels.map((channel) => subscribeAnswer(raw, channel)));
    const succeeded = answers.filter((a) => a.event === 'pusher_internal:subscription_succeeded');
    expect(succeeded).to.have.length(MAX_SUBSCRIPTIONS);
    const refused = answers.filter((a) => a.event === 'pusher:subscription_error');
    expect(refused.map((a) => a.data.error)).to.deep.equal(Array(5).fill(`at most ${MAX_SUBSCRIPTIONS} subscriptions per connection`));
    // One left makes room for one more.
    raw.send({ event: 'pusher:unsubscribe', data: { channel: succeeded[0].channel } });
    raw.frames.length = 0;
    raw.send(signedSubscribe(socketId, 'presence-cap-more', 'capped'));
    expect((await subscribeAnswer(raw, 'presence-cap-more')).event).to.equal('pusher_internal:subscription_succeeded');
  });

  it('answers a subscribe to a channel already held with subscription_succeeded again', async () => {
    const { raw, socketId } = await open();
    for (const frame of [{ event: 'pusher:subscribe', data: { channel: 'again' } }, signedSubscribe(socketId, 'private-again')]) {
      raw.send(frame);
      await subscribeAnswer(raw, frame.data.channel);
      raw.frames.length = 0;
      raw.send(frame);
      expect((await subscribeAnswer(raw, frame.data.channel)).event).to.equal('pusher_internal:subscription_succeeded');
    }
  });

  it('names the channel as the client spelled it in a refusal', async () => {
    const { raw } = await open();
    raw.send({ event: 'pusher:subscribe', data: { channel: 'pub-2' } });
    await subscribeAnswer(raw, 'pub-2');
    raw.send({ event: 'client-x', channel: 'pub-2', data: {} });
    const error = await raw.event('pusher:error');
    expect(error.data.code).to.equal(4301);
    expect(error.data.message).to.include('pub-2');
    expect(error.data.message).not.to.include('#');
  });

  it("tells both the native webhooks and the Pusher app's webhooks of occupancy, and only the app's of its Ably channel's", async () => {
    const ws = new WebSocket(gw.url);
    const ably = new WebSocket(`ws://127.0.0.1:${gw.port}/?v=6&format=json&key=${encodeURIComponent(`${APP.appId}.${APP.key}:${APP.secret}`)}`);
    await Promise.all([ws, ably].map((socket) => new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject))));
    try {
      // An Ably channel of the same app is occupied first: the Pusher channel's event after it is the marker that all of its were told.
      const attached = new Promise((resolve) => ably.on('message', (data) => JSON.parse(String(data)).action === 11 && resolve()));
      ably.send(JSON.stringify({ action: 10, channel: 'ably-room' }));
      await attached;
      ws.send(JSON.stringify({ type: 'subscribe', channel: 'native-room', id: 1 }));
      const { raw } = await open();
      raw.send({ event: 'pusher:subscribe', data: { channel: 'pusher-room' } });
      await subscribeAnswer(raw, 'pusher-room');
      await eventually(() => native.namesOn('native-room').includes('channel_occupied'), { what: 'the native channel_occupied' });
      await eventually(() => pusher.events.some((e) => e.name === 'channel_occupied' && e.channel === 'pusher-room'), { what: "the Pusher app's channel_occupied" });
      expect(native.events.filter((e) => e.channel.includes('pusher-room'))).to.deep.equal([]);
      // The app's Ably channel is its webhooks' too, marked as Ably's; the native webhooks are told of native channels only.
      expect(pusher.events.filter((e) => e.channel.includes('ably-room'))).to.deep.equal([{ name: 'channel_occupied', channel: 'ably-room', protocol: 'ably' }]);
      expect(pusher.events.find((e) => e.channel === 'pusher-room')).to.not.have.property('protocol');
      expect(native.events.filter((e) => e.channel.includes('ably-room'))).to.deep.equal([]);
    } finally {
      ably.close();
      ws.close();
    }
  });
});
