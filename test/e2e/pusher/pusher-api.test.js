// Pusher's HTTP API routes and sign-in on a real gateway (2 workers), with
// the `pusher` server SDK and pusher-js 8: channels, channel, users,
// terminate_connections, sendToUser, and cache channels.
import { expect } from 'chai';
import { APP, channelAuth, clientAwayFrom, connected, eventually, pusherClient, RawPusher, serverSdk, signedRequest, startPusherGateway, subscribed } from '../../helpers/pusher.js';

describe('Pusher HTTP API and sign-in', function () {
  this.timeout(60000);
  let gw;
  let sdk;
  const clients = [];
  const track = (client) => (clients.push(client), client);

  before(async () => {
    gw = await startPusherGateway(['--balance', 'even']);
    sdk = serverSdk(gw);
  });
  after(() => gw?.stop());
  afterEach(() => {
    for (const client of clients.splice(0)) {
      if (client instanceof RawPusher) client.close();
      else client.disconnect();
    }
  });

  const get = async (path, params) => {
    const res = await sdk.get({ path, params });
    return res.json();
  };

  it('lists occupied channels, with prefix and user_count, and answers one channel\'s counts', async () => {
    const a = track(pusherClient(gw, { member: { user_id: 'u1', user_info: {} } }));
    const b = track(pusherClient(gw, { member: { user_id: 'u2', user_info: {} } }));
    const c = track(pusherClient(gw, { member: { user_id: 'u2', user_info: {} } }));
    await Promise.all([a, b, c].map(connected));
    for (const client of [a, b, c]) await subscribed(client, 'presence-team');
    await subscribed(a, 'lobby');
    await subscribed(b, 'lobby');

    const all = await get('/channels');
    expect(all.channels).to.deep.equal({ 'presence-team': {}, lobby: {} });
    const presence = await get('/channels', { filter_by_prefix: 'presence-', info: 'user_count' });
    expect(presence.channels).to.deep.equal({ 'presence-team': { user_count: 2 } });
    expect(await get('/channels/lobby', { info: 'subscription_count' })).to.deep.equal({ occupied: true, subscription_count: 2 });
    expect(await get('/channels/presence-team', { info: 'user_count,subscription_count' })).to.deep.equal({ occupied: true, user_count: 2, subscription_count: 3 });
    expect(await get('/channels/empty')).to.deep.equal({ occupied: false });
    const users = await get('/channels/presence-team/users');
    expect(users.users.map((u) => u.id).sort()).to.deep.equal(['u1', 'u2']);
    // Pusher's refusals: user_count off presence, users of a public channel.
    for (const [path, params] of [
      ['/channels', { info: 'user_count' }],
      ['/channels/lobby', { info: 'user_count' }],
      ['/channels/lobby/users', {}]
    ]) {
      const err = await sdk.get({ path, params }).catch((e) => e);
      expect(err.status, path).to.equal(400);
    }
  });

  it('signs pusher-js in, reaches the user with sendToUser, and terminate_connections closes every connection of that user on every worker', async () => {
    const make = (id) =>
      track(
        pusherClient(gw, {
          userAuthentication: { customHandler: ({ socketId }, callback) => callback(null, sdk.authenticateUser(socketId, { id })) }
        })
      );
    const first = make('carol');
    const second = await clientAwayFrom(await connected(first), () => make('carol')); // two workers
    const other = make('dave');
    await connected(other);
    for (const client of [first, second, other]) client.signin();
    await eventually(() => [first, second, other].every((client) => client.user.user_data !== null), { what: 'signed in' });
    // pusher-js subscribes its #server-to-user channel after signing in.
    await eventually(() => first.user.serverToUserChannel?.subscribed && second.user.serverToUserChannel?.subscribed, { what: 'user channels subscribed' });
    const got = new Promise((resolve) => first.user.bind('note', resolve));
    expect((await sdk.sendToUser('carol', 'note', { hi: 1 })).status).to.equal(200);
    expect(await got).to.deep.equal({ hi: 1 });

    const closed = [first, second].map((client) => new Promise((resolve) => client.connection.bind('error', (err) => resolve(err.data?.code ?? err.error?.data?.code))));
    expect((await sdk.terminateUserConnections('carol')).status).to.equal(200);
    expect(await Promise.all(closed)).to.deep.equal([4009, 4009]);
    expect(other.connection.state).to.equal('connected');
  });

  it('refuses a sign-in with a bad signature or no id, and a #server-to-user channel not its own', async () => {
    const raw = track(await RawPusher.open(gw));
    const socketId = await raw.socketId();
    const userData = JSON.stringify({ id: 'eve' });
    raw.send({ event: 'pusher:signin', data: { auth: `${APP.key}:${'0'.repeat(64)}`, user_data: userData } });
    expect((await raw.event('pusher:error')).data.code).to.equal(4009);
    raw.frames.length = 0;
    raw.send({ event: 'pusher:subscribe', data: { channel: '#server-to-user-eve' } });
    expect((await raw.event('pusher:subscription_error', '#server-to-user-eve')).data.status).to.equal(403);
    const noId = sdk.authenticateUser(socketId, { id: 'x' });
    raw.send({ event: 'pusher:signin', data: { auth: noId.auth, user_data: '{"name":"x"}' } });
    expect((await raw.event('pusher:error')).data.code).to.equal(4009);
  });

  it('follows a cache channel\'s subscribe with its last event, or pusher:cache_miss', async () => {
    const miss = track(await RawPusher.open(gw));
    miss.send({ event: 'pusher:subscribe', data: { channel: 'cache-price' } });
    await miss.event('pusher:cache_miss', 'cache-price');
    await sdk.trigger('cache-price', 'tick', { p: 1 });
    await sdk.trigger('cache-price', 'tick', { p: 2 });
    await eventually(() => miss.frames.filter((f) => f.event === 'tick').length === 2, { what: 'both ticks' });
    const late = track(await RawPusher.open(gw));
    late.send({ event: 'pusher:subscribe', data: { channel: 'cache-price' } });
    await late.event('pusher_internal:subscription_succeeded', 'cache-price');
    expect((await late.event('tick', 'cache-price')).data).to.deep.equal({ p: 2 });
    expect(late.frames.some((f) => f.event === 'pusher:cache_miss')).to.equal(false);
    const info = await get('/channels/cache-price', { info: 'cache' });
    expect(info.cache.value).to.equal(JSON.stringify({ p: 2 }));
  });

  it("keeps a presence-cache channel's last event an event of the app's, whatever members come and go", async () => {
    const join = async (userId) => {
      const raw = track(await RawPusher.open(gw));
      const socketId = await raw.socketId();
      const channelData = JSON.stringify({ user_id: userId });
      raw.send({ event: 'pusher:subscribe', data: { channel: 'presence-cache-desk', auth: channelAuth(`${socketId}:presence-cache-desk:${channelData}`), channel_data: channelData } });
      await raw.event('pusher_internal:subscription_succeeded', 'presence-cache-desk');
      return raw;
    };
    const first = await join('p1');
    await first.event('pusher:cache_miss', 'presence-cache-desk');
    await sdk.trigger('presence-cache-desk', 'state', { v: 1 });
    await first.event('state', 'presence-cache-desk');
    await join('p2');
    await first.event('pusher_internal:member_added', 'presence-cache-desk');
    const third = await join('p3');
    expect((await third.event('state', 'presence-cache-desk')).data).to.deep.equal({ v: 1 });
    expect(third.frames.some((f) => f.event === 'pusher:cache_miss' || f.event === 'pusher_internal:member_added')).to.equal(false);
  });

  it('passes private-encrypted payloads through untouched and refuses client events there', async () => {
    const raw = track(await RawPusher.open(gw));
    const socketId = await raw.socketId();
    const auth = channelAuth(`${socketId}:private-encrypted-vault`);
    raw.send({ event: 'pusher:subscribe', data: { channel: 'private-encrypted-vault', auth } });
    await raw.event('pusher_internal:subscription_succeeded', 'private-encrypted-vault');
    const sealed = JSON.stringify({ nonce: 'bm9uY2U=', ciphertext: 'c2VhbGVk' });
    const res = await fetch(`${gw.http}/apps/${APP.appId}/events`).then((r) => r.status);
    expect(res).to.equal(404); // GET on a POST route
    await sdk.post({ path: '/events', body: { name: 'secret', channels: ['private-encrypted-vault'], data: sealed } });
    expect((await raw.frame((f) => f.event === 'secret', 'the sealed event')).data).to.deep.equal(JSON.parse(sealed));
    raw.send({ event: 'client-x', channel: 'private-encrypted-vault', data: {} });
    expect((await raw.event('pusher:error')).data.code).to.equal(4301);
  });

  it('validates a whole trigger, info included, before it publishes anything', async () => {
    const raw = track(await RawPusher.open(gw));
    await raw.socketId();
    raw.send({ event: 'pusher:subscribe', data: { channel: 'lobby-info' } });
    await raw.event('pusher_internal:subscription_succeeded', 'lobby-info');
    // user_count is a presence channel's: asked of a public one, the request is refused whole.
    const events = await signedRequest(gw, 'POST', `/apps/${APP.appId}/events`, { body: { name: 'refused', data: '1', channel: 'lobby-info', info: 'user_count' } });
    expect(events.status).to.equal(400);
    expect(events.body).to.match(/user_count is for presence channels only/);
    const batch = [
      { name: 'refused', data: '2', channel: 'lobby-info' },
      { name: 'refused', data: '3', channel: 'lobby-info', info: 'user_count' }
    ];
    expect((await signedRequest(gw, 'POST', `/apps/${APP.appId}/batch_events`, { body: { batch } })).status).to.equal(400);
    // The marker, sent after them: nothing refused arrived before it.
    await sdk.trigger('lobby-info', 'marker', {});
    await raw.event('marker', 'lobby-info');
    expect(raw.frames.filter((f) => f.event === 'refused')).to.deep.equal([]);
    // An info that is not a string is refused too, not ignored.
    expect((await signedRequest(gw, 'POST', `/apps/${APP.appId}/events`, { body: { name: 'refused', data: '4', channel: 'lobby-info', info: ['user_count'] } })).status).to.equal(400);
    // What info may ask is answered as before.
    const counted = await signedRequest(gw, 'POST', `/apps/${APP.appId}/events`, { body: { name: 'counted', data: '5', channel: 'lobby-info', info: 'subscription_count' } });
    expect(counted).to.deep.equal({ status: 200, body: { channels: { 'lobby-info': { occupied: true, subscription_count: 1 } } } });
  });

  it('lists a channel named __proto__, and answers a trigger\'s info for it', async () => {
    const raw = track(await RawPusher.open(gw));
    await raw.socketId();
    raw.send({ event: 'pusher:subscribe', data: { channel: '__proto__' } });
    await raw.event('pusher_internal:subscription_succeeded', '__proto__');
    const listed = await eventually(async () => {
      const { body } = await signedRequest(gw, 'GET', `/apps/${APP.appId}/channels`);
      return Object.hasOwn(body.channels, '__proto__') && body;
    }, { what: '__proto__ in the channels listing' });
    expect(Object.getOwnPropertyDescriptor(listed.channels, '__proto__').value).to.deep.equal({});
    const triggered = await signedRequest(gw, 'POST', `/apps/${APP.appId}/events`, { body: { name: 'ev', data: '1', channels: ['__proto__', 'constructor'], info: 'subscription_count' } });
    expect(triggered.status).to.equal(200);
    expect(Object.keys(triggered.body.channels)).to.deep.equal(['__proto__', 'constructor']);
    expect(Object.getOwnPropertyDescriptor(triggered.body.channels, '__proto__').value).to.deep.equal({ occupied: true, subscription_count: 1 });
    await raw.event('ev', '__proto__');
  });
});
