// Pusher presence channels on a real gateway (2 workers) with pusher-js 8,
// Laravel Echo and the pusher SDK: one member per user however many
// connections, member_added/member_removed across workers, the app's
// maxPresenceMembers, bad channel_data, and a drain (4200) that pusher-js
// reconnects through.
import { expect } from 'chai';
import Echo from 'laravel-echo';
import PusherJs from 'pusher-js';
import { startGateway } from '../../../scripts/harness/gateway.js';
import { configFile } from '../../helpers/api.js';
import { APP, OTHER_APP, channelAuth, clientAwayFrom, clientOptions, connected, eventually, pusherClient, RawPusher, serverSdk, subscribed } from '../../helpers/pusher.js';

const member = (id, name) => ({ user_id: id, user_info: { name } });
// A name JSON escapes (quotes, a backslash, U+2028) with a 4-byte character: members travel as values.
const BOB = 'Bob "B" \\ \u2028 😀';

describe('Pusher presence', function () {
  this.timeout(60000);
  let gw;
  const clients = [];
  const track = (client) => (clients.push(client), client);

  before(async () => {
    const file = configFile({ pusherApps: [{ ...APP, clientEvents: true, maxPresenceMembers: 3 }, OTHER_APP] });
    gw = await startGateway(['--config', file, '--balance', 'even']);
  });
  after(() => gw?.stop());
  afterEach(() => {
    for (const client of clients.splice(0)) {
      if (client instanceof RawPusher) client.close();
      else client.disconnect();
    }
  });

  it('lists each user once, tells member_added/member_removed across workers, once per user', async () => {
    const alice = track(pusherClient(gw, { member: member('1', 'Alice') }));
    const bob = track(await clientAwayFrom(await connected(alice), () => pusherClient(gw, { member: member('2', BOB) })));
    const { channel: aliceRoom, data: first } = await subscribed(alice, 'presence-room');
    expect(first.count).to.equal(1);
    expect(first.me.id).to.equal('1');
    const added = [];
    const removed = [];
    aliceRoom.bind('pusher:member_added', (m) => added.push(m));
    aliceRoom.bind('pusher:member_removed', (m) => removed.push(m));

    const { data: members } = await subscribed(bob, 'presence-room');
    expect(members.count).to.equal(2);
    expect(members.members).to.deep.equal({ 1: { name: 'Alice' }, 2: { name: BOB } });
    await eventually(() => added.length === 1, { what: "Bob's member_added at Alice" });
    expect(added[0]).to.deep.equal({ id: '2', info: { name: BOB } });

    // Bob's second tab is not a new member; its leaving removes nobody.
    const bobAgain = pusherClient(gw, { member: member('2', BOB) });
    await connected(bobAgain);
    const { data: again } = await subscribed(bobAgain, 'presence-room');
    expect(again.count).to.equal(2);
    bobAgain.disconnect();
    await eventually(async () => (await gw.metric('gateway_connections', '{transport="ws",protocol="pusher"}')) === 2, { what: "the second tab's close" });
    const marked = new Promise((resolve) => aliceRoom.bind('marker', resolve));
    expect((await serverSdk(gw).trigger('presence-room', 'marker', '{}')).status).to.equal(200);
    await marked;
    expect(added).to.have.length(1);
    expect(removed).to.have.length(0);

    bob.disconnect();
    await eventually(() => removed.length === 1, { what: "Bob's member_removed at Alice" });
    expect(removed[0].id).to.equal('2');
    expect(aliceRoom.members.count).to.equal(1);
  });

  it('refuses a member past maxPresenceMembers with pusher:subscription_error, and lets a present user in', async () => {
    const raws = [];
    for (let i = 1; i <= 4; i++) raws.push(track(await RawPusher.open(gw)));
    const join = async (raw, userId) => {
      const socketId = await raw.socketId();
      const channelData = JSON.stringify({ user_id: userId });
      raw.send({ event: 'pusher:subscribe', data: { channel: 'presence-full', auth: channelAuth(`${socketId}:presence-full:${channelData}`), channel_data: channelData } });
      return raw.frame((f) => f.channel === 'presence-full' && f.event.includes('subscription'), 'the subscribe answer');
    };
    for (let i = 0; i < 3; i++) expect((await join(raws[i], `u${i}`)).event).to.equal('pusher_internal:subscription_succeeded');
    const refused = await join(raws[3], 'u3');
    expect(refused.event).to.equal('pusher:subscription_error');
    expect(refused.data.status).to.equal(403);
    const another = track(await RawPusher.open(gw));
    expect((await join(another, 'u0')).event).to.equal('pusher_internal:subscription_succeeded');
  });

  it('refuses bad channel_data with a subscription_error and nothing else', async () => {
    const raw = track(await RawPusher.open(gw));
    const socketId = await raw.socketId();
    const cases = [
      ['not JSON', 'not json'],
      ['no user_id', JSON.stringify({ user_info: {} })],
      ['10 KB', JSON.stringify({ user_id: '1', user_info: { pad: 'x'.repeat(10240) } })]
    ];
    for (const [i, [what, channelData]] of cases.entries()) {
      const channel = `presence-bad-${i}`;
      raw.send({ event: 'pusher:subscribe', data: { channel, auth: channelAuth(`${socketId}:${channel}:${channelData}`), channel_data: channelData } });
      const error = await raw.event('pusher:subscription_error', channel);
      expect(error.data.status, what).to.equal(400);
    }
    raw.send({ event: 'pusher:subscribe', data: { channel: 'presence-bad-3', auth: channelAuth(`${socketId}:presence-bad-3`) } });
    expect((await raw.event('pusher:subscription_error', 'presence-bad-3')).data.status, 'no channel_data').to.equal(401);
  });

  it('carries client events on presence channels with the sender\'s user_id', async () => {
    const a = track(pusherClient(gw, { member: member('10', 'A') }));
    const b = track(pusherClient(gw, { member: member('11', 'B') }));
    await Promise.all([connected(a), connected(b)]);
    const { channel: chA } = await subscribed(a, 'presence-talk');
    const { channel: chB } = await subscribed(b, 'presence-talk');
    const got = new Promise((resolve) => chB.bind('client-hi', (data, meta) => resolve([data, meta])));
    chA.trigger('client-hi', { text: 'hello' });
    const [data, meta] = await got;
    expect(data).to.deep.equal({ text: 'hello' });
    expect(meta.user_id).to.equal('10');
  });

  it("keeps two apps apart: the same channel name is two channels, and one app's signature opens nothing of the other's", async () => {
    const one = track(await RawPusher.open(gw));
    const two = track(await RawPusher.open(gw, { key: OTHER_APP.key }));
    for (const raw of [one, two]) {
      raw.send({ event: 'pusher:subscribe', data: { channel: 'same-name' } });
      await raw.event('pusher_internal:subscription_succeeded', 'same-name');
    }
    expect((await serverSdk(gw, OTHER_APP).trigger('same-name', 'for-two', '{}')).status).to.equal(200);
    await two.event('for-two', 'same-name');
    expect((await serverSdk(gw).trigger('same-name', 'for-one', '{}')).status).to.equal(200);
    await one.event('for-one', 'same-name');
    expect(one.frames.some((f) => f.event === 'for-two')).to.equal(false);
    expect(two.frames.some((f) => f.event === 'for-one')).to.equal(false);
    // App one's signature for app two's socket and channel: 401 there.
    const socketId = await two.socketId();
    two.send({ event: 'pusher:subscribe', data: { channel: 'private-x', auth: channelAuth(`${socketId}:private-x`) } });
    expect((await two.event('pusher:subscription_error', 'private-x')).data.status).to.equal(401);
    // App one's HTTP API credentials on app two's path: 401.
    const wrongApp = await serverSdk(gw, { ...APP, appId: OTHER_APP.appId }).trigger('same-name', 'x', '{}').catch((err) => err);
    expect(wrongApp.status).to.equal(401);
  });

  it('works through Laravel Echo configured as the README says', async () => {
    const sdk = serverSdk(gw);
    // The README's configuration: broadcaster, key, wsHost, wsPort, forceTLS, enabledTransports, cluster.
    const echo = new Echo({ broadcaster: 'pusher', key: APP.key, Pusher: PusherJs, ...clientOptions(gw, member('42', 'Echo'), sdk) });
    try {
      const here = new Promise((resolve) => echo.join('lobby').here(resolve));
      const got = new Promise((resolve) => echo.channel('orders').listen('.OrderShipped', resolve));
      expect((await here).map((m) => m.name)).to.deep.equal(['Echo']);
      await eventually(() => echo.connector.pusher.channel('orders')?.subscribed, { what: 'Echo subscribed to orders' });
      await sdk.trigger('orders', 'OrderShipped', { id: 1 });
      expect(await got).to.deep.equal({ id: 1 });
    } finally {
      echo.disconnect();
    }
  });
});

describe('Pusher drain', function () {
  this.timeout(60000);
  it('closes with 4200 on a rolling restart, and pusher-js reconnects and resubscribes at once', async () => {
    const gw = await startGateway(['--pusher-app-id', APP.appId, '--pusher-key', APP.key, '--pusher-secret', APP.secret, '--workers', '1', '--drain-timeout', '200']);
    const client = pusherClient(gw);
    try {
      const raw = await RawPusher.open(gw);
      const first = await connected(client);
      const { channel } = await subscribed(client, 'private-live');
      const got = [];
      channel.bind('tick', (data) => got.push(data));
      gw.signal('SIGHUP');
      expect((await raw.closed).code).to.equal(4200);
      await eventually(() => client.connection.state === 'connected' && client.connection.socket_id !== first, { what: 'pusher-js reconnected', timeout: 20000 });
      await eventually(
        async () => {
          await serverSdk(gw).trigger('private-live', 'tick', { n: 1 });
          return got.length > 0;
        },
        { what: 'an event after the reconnect', timeout: 20000, interval: 200 }
      );
    } finally {
      client.disconnect();
      await gw.stop();
    }
  });
});
