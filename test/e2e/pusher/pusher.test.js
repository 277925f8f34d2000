// Pusher's protocol on a real gateway (2 workers), with the real pusher-js 8
// and `pusher` server SDK, unchanged: connect, public and private channels,
// client events between workers, the HTTP API's events with Pusher's
// request signature, the bad inputs Pusher answers, and native clients on
// the same gateway that never see an app's channels.
import { expect } from 'chai';
import { startGateway } from '../../../scripts/harness/gateway.js';
import { httpPublish, nodeClient, whenOpen } from '../../helpers/client-helpers.js';
import { api } from '../../helpers/api.js';
import {
  APP,
  channelAuth,
  clientAwayFrom,
  connected,
  eventually,
  pusherClient,
  RawPusher,
  serverSdk,
  signedRequest,
  startPusherGateway,
  subscribed
} from '../../helpers/pusher.js';

describe('Pusher protocol', function () {
  this.timeout(60000);
  let gw;
  const clients = [];
  const track = (client) => (clients.push(client), client);

  before(async () => {
    gw = await startPusherGateway(['--balance', 'even', '--api-key', 'test-key']);
  });
  after(() => gw?.stop());
  afterEach(() => {
    for (const client of clients.splice(0)) {
      if (client instanceof RawPusher) client.close();
      else client.disconnect();
    }
  });

  it('connects pusher-js: a socket_id of digits.digits, then a public channel gets the HTTP API events', async () => {
    const client = track(pusherClient(gw));
    const socketId = await connected(client);
    expect(socketId).to.match(/^\d+\.\d+$/);
    const { channel } = await subscribed(client, 'news');
    const got = new Promise((resolve) => channel.bind('headline', resolve));
    const res = await serverSdk(gw).trigger('news', 'headline', { title: 'hi' });
    expect(res.status).to.equal(200);
    expect(await got).to.deep.equal({ title: 'hi' });
  });

  it('answers pusher:ping with pusher:pong and states its activity timeout', async () => {
    const raw = track(await RawPusher.open(gw));
    const established = await raw.event('pusher:connection_established');
    expect(established.data.activity_timeout).to.be.a('number').above(0);
    raw.send({ event: 'pusher:ping', data: {} });
    await raw.event('pusher:pong');
  });

  it('counts Pusher connections as gateway_connections{transport="ws",protocol="pusher"}', async () => {
    track(await RawPusher.open(gw));
    await eventually(async () => (await gw.metric('gateway_connections', '{transport="ws",protocol="pusher"}')) >= 1, { what: 'pusher connections gauge' });
  });

  it('publishes to several channels at once and leaves out the socket_id the HTTP API names', async () => {
    const a = track(await RawPusher.open(gw));
    const b = track(await RawPusher.open(gw));
    for (const raw of [a, b]) {
      raw.send({ event: 'pusher:subscribe', data: { channel: 'room-1' } });
      await raw.event('pusher_internal:subscription_succeeded', 'room-1');
    }
    const res = await serverSdk(gw).trigger(['room-1', 'room-2'], 'said', 'plain text', { socket_id: await a.socketId() });
    expect(res.status).to.equal(200);
    const frame = await b.event('said', 'room-1');
    expect(frame.data).to.equal('plain text');
    const marker = await serverSdk(gw).trigger('room-1', 'marker', '{}');
    expect(marker.status).to.equal(200);
    await a.event('marker', 'room-1');
    expect(a.frames.some((f) => f.event === 'said')).to.equal(false);
  });

  it('subscribes a private channel with the SDK\'s signature and refuses a bad one with 401, nothing else', async () => {
    const client = track(pusherClient(gw));
    await connected(client);
    const { channel } = await subscribed(client, 'private-orders');
    const got = new Promise((resolve) => channel.bind('created', resolve));
    await serverSdk(gw).trigger('private-orders', 'created', { id: 7 });
    expect(await got).to.deep.equal({ id: 7 });

    const raw = track(await RawPusher.open(gw));
    const socketId = await raw.socketId();
    const cases = [
      ['no auth', { channel: 'private-a' }],
      ['another socket id', { channel: 'private-b', auth: channelAuth(`1.1:private-b`) }],
      ['another channel', { channel: 'private-c', auth: channelAuth(`${socketId}:private-x`) }],
      ['another app', { channel: 'private-d', auth: channelAuth(`${socketId}:private-d`, { key: 'key-2', secret: 'another-secret-24-chars!' }) }],
      ['a truncated signature', { channel: 'private-e', auth: channelAuth(`${socketId}:private-e`).slice(0, -2) }],
      ['a non-hex signature', { channel: 'private-f', auth: `${APP.key}:${'z'.repeat(64)}` }]
    ];
    for (const [what, data] of cases) {
      raw.send({ event: 'pusher:subscribe', data });
      const error = await raw.event('pusher:subscription_error', data.channel);
      expect(error.data.status, what).to.equal(401);
    }
    // Still open, and a good signature still works.
    raw.send({ event: 'pusher:subscribe', data: { channel: 'private-g', auth: channelAuth(`${socketId}:private-g`) } });
    await raw.event('pusher_internal:subscription_succeeded', 'private-g');
    expect(raw.frames.filter((f) => f.event === 'pusher_internal:subscription_succeeded')).to.have.length(1);
  });

  it('carries client events between two pusher-js clients on two workers, never back to the sender', async () => {
    const a = track(pusherClient(gw));
    const b = track(await clientAwayFrom(await connected(a), () => pusherClient(gw)));
    const { channel: chA } = await subscribed(a, 'private-chat');
    const { channel: chB } = await subscribed(b, 'private-chat');
    const echoed = [];
    chA.bind('client-typing', (data) => echoed.push(data));
    const got = new Promise((resolve) => chB.bind('client-typing', resolve));
    expect(chA.trigger('client-typing', { who: 'a' })).to.equal(true);
    expect(await got).to.deep.equal({ who: 'a' });
    // A later event from B reaches A: by then A's own would have come back had it been echoed.
    const back = new Promise((resolve) => chA.bind('client-reply', resolve));
    chB.trigger('client-reply', { who: 'b' });
    await back;
    expect(echoed).to.deep.equal([]);
  });

  it('refuses client events with 4301: on a public channel, unsubscribed, and past 10 per second', async () => {
    const raw = track(await RawPusher.open(gw));
    const socketId = await raw.socketId();
    raw.send({ event: 'pusher:subscribe', data: { channel: 'open' } });
    await raw.event('pusher_internal:subscription_succeeded', 'open');
    raw.send({ event: 'client-x', channel: 'open', data: {} });
    await raw.frame((f) => f.event === 'pusher:error' && f.data.code === 4301, '4301 on a public channel');
    raw.frames.length = 0;
    raw.send({ event: 'client-x', channel: 'private-never', data: {} });
    await raw.frame((f) => f.event === 'pusher:error' && f.data.code === 4301, '4301 unsubscribed');

    const peer = track(await RawPusher.open(gw));
    const peerId = await peer.socketId();
    for (const [r, id] of [
      [raw, socketId],
      [peer, peerId]
    ]) {
      r.send({ event: 'pusher:subscribe', data: { channel: 'private-rate', auth: channelAuth(`${id}:private-rate`) } });
      await r.event('pusher_internal:subscription_succeeded', 'private-rate');
    }
    raw.frames.length = 0;
    for (let i = 0; i < 11; i++) raw.send({ event: 'client-n', channel: 'private-rate', data: { i } });
    await raw.frame((f) => f.event === 'pusher:error' && f.data.code === 4301, '4301 past the rate');
    await eventually(() => peer.frames.filter((f) => f.event === 'client-n').length === 10, { what: 'the first 10 client events' });
    expect(raw.frames.filter((f) => f.event === 'pusher:error')).to.have.length(1);
  });

  it('refuses a wrong key (4001) and protocols 4 and 8 (4007) with pusher:error and that close code', async () => {
    for (const [options, code] of [
      [{ key: 'nope' }, 4001],
      [{ query: '?protocol=4' }, 4007],
      [{ query: '?protocol=8' }, 4007]
    ]) {
      const raw = await RawPusher.open(gw, options);
      const error = await raw.event('pusher:error');
      expect(error.data.code).to.equal(code);
      expect((await raw.closed).code).to.equal(code);
    }
  });

  it('answers bad frames with pusher:error and stays open', async () => {
    const raw = track(await RawPusher.open(gw));
    await raw.socketId();
    const bad = ['not json', '[1]', JSON.stringify({ event: 'pusher:nonsense', data: {} }), JSON.stringify({ event: 'pusher:subscribe', data: 42 })];
    for (const text of bad) raw.send(text);
    await eventually(() => raw.frames.filter((f) => f.event === 'pusher:error').length === bad.length, { what: 'one pusher:error per bad frame' });
    for (const [channel, what] of [
      ['x'.repeat(165), '165 characters'],
      ['bad#name', 'a forbidden character']
    ]) {
      raw.send({ event: 'pusher:subscribe', data: { channel } });
      const error = await raw.frame((f) => f.event === 'pusher:subscription_error' && f.channel === channel.slice(0, 200), what);
      expect(error.data.status).to.equal(400);
    }
    const ok = 'a-b_c=d@e,f.g;h' + 'x'.repeat(149); // 164 characters of every allowed kind
    raw.send({ event: 'pusher:subscribe', data: { channel: ok } });
    await raw.event('pusher_internal:subscription_succeeded', ok);
    raw.send({ event: 'pusher:ping', data: {} });
    await raw.event('pusher:pong');
  });

  it('refuses bad HTTP API requests as Pusher does, publishing nothing', async () => {
    const raw = track(await RawPusher.open(gw));
    raw.send({ event: 'pusher:subscribe', data: { channel: 'guarded' } });
    await raw.event('pusher_internal:subscription_succeeded', 'guarded');
    const path = `/apps/${APP.appId}/events`;
    const event = { name: 'e', channel: 'guarded', data: '{}' };
    const cases = [
      ['a wrong signature', { body: event, signWith: 'not-the-secret-at-all' }, 401],
      ['a timestamp 601 s old', { body: event, timestamp: Math.floor(Date.now() / 1000) - 601 }, 401],
      ['a wrong body_md5', { body: event, bodyMd5: '0'.repeat(32) }, 401],
      ['101 channels', { body: { name: 'e', data: '{}', channels: Array.from({ length: 101 }, (_, i) => `c${i}`) } }, 400],
      ['10 KB + 1 of data', { body: { ...event, data: 'x'.repeat(10241) } }, 413],
      ['data that is not a string', { body: { ...event, data: { a: 1 } } }, 400],
      ['a bad channel name', { body: { ...event, channel: 'no#pe' } }, 400],
      ['a bad socket_id', { body: { ...event, socket_id: 'abc' } }, 400],
      ["an event of Pusher's own", { body: { ...event, name: 'pusher_internal:member_added' } }, 400],
      ['11 batch events', { body: { batch: Array.from({ length: 11 }, () => event) } }, 400, `/apps/${APP.appId}/batch_events`]
    ];
    for (const [what, options, status, at = path] of cases) {
      const res = await signedRequest(gw, 'POST', at, options);
      expect(res.status, what).to.equal(status);
    }
    const missing = await fetch(`${gw.http}${path}`, { method: 'POST', body: JSON.stringify(event) });
    expect(missing.status, 'no signature at all').to.equal(401);
    expect((await signedRequest(gw, 'POST', '/apps/no-such-app/events', { body: event })).status, 'an unknown app').to.equal(404);
    const good = await signedRequest(gw, 'POST', path, { body: { ...event, name: 'after' } });
    expect(good.status).to.equal(200);
    await raw.event('after', 'guarded');
    expect(raw.frames.filter((f) => f.event === 'e')).to.have.length(0);
  });

  it('batch_events publishes each event to its channel', async () => {
    const raw = track(await RawPusher.open(gw));
    for (const channel of ['b1', 'b2']) {
      raw.send({ event: 'pusher:subscribe', data: { channel } });
      await raw.event('pusher_internal:subscription_succeeded', channel);
    }
    const res = await serverSdk(gw).triggerBatch([
      { channel: 'b1', name: 'one', data: { n: 1 } },
      { channel: 'b2', name: 'two', data: { n: 2 } }
    ]);
    expect(res.status).to.equal(200);
    expect((await raw.event('one', 'b1')).data).to.deep.equal({ n: 1 });
    expect((await raw.event('two', 'b2')).data).to.deep.equal({ n: 2 });
  });

  it('keeps an app and native clients apart on the same gateway', async () => {
    const native = nodeClient(gw.url);
    try {
      await whenOpen(native);
      const nativeGot = [];
      native.subscribe('shared', (data) => nativeGot.push(data));
      const raw = track(await RawPusher.open(gw));
      raw.send({ event: 'pusher:subscribe', data: { channel: 'shared' } });
      await raw.event('pusher_internal:subscription_succeeded', 'shared');
      expect((await serverSdk(gw).trigger('shared', 'pusher-side', '"p"')).status).to.equal(200);
      await raw.event('pusher-side', 'shared');
      // A native publish stays native.
      expect(await httpPublish(gw, 'shared', 'native-side')).to.be.a('number');
      await eventually(() => nativeGot.length === 1, { what: 'the native message' });
      expect(nativeGot).to.deep.equal(['native-side']);
      expect(raw.frames.some((f) => f.data === 'native-side')).to.equal(false);
      // The server API lists native channels only.
      const { body } = await api(gw, 'channels', {});
      expect(Object.keys(body.result.channels)).to.deep.equal(['shared']);
      // A native client cannot name an app's internal channel.
      const refused = await native.subscribe('#app-1.pub:shared').catch((err) => err);
      expect(refused.code).to.equal('invalid_channel');
    } finally {
      native.close();
    }
  });
});

describe('Pusher beside --auth jwt', function () {
  this.timeout(30000);
  it("follows Pusher's model whatever --auth says: no token, public channels open, presence signed, and closes leave the gateway's users alone", async () => {
    const gw = await startPusherGateway(['--auth', 'jwt', '--jwt-secret', 'x'.repeat(32), '--max-conns-per-user', '1']);
    try {
      const a = pusherClient(gw, { member: { user_id: '7', user_info: {} } });
      const b = pusherClient(gw, { member: { user_id: '7', user_info: {} } });
      await Promise.all([connected(a), connected(b)]);
      const { channel } = await subscribed(a, 'news');
      const got = new Promise((resolve) => channel.bind('e', resolve));
      await serverSdk(gw).trigger('news', 'e', { ok: 1 });
      expect(await got).to.deep.equal({ ok: 1 });
      // The same presence user twice: Pusher's user, not the gateway's (no --max-conns-per-user for it).
      await subscribed(a, 'presence-x');
      const { data } = await subscribed(b, 'presence-x');
      expect(data.count).to.equal(1);
      a.disconnect();
      b.disconnect();
      await eventually(async () => (await gw.metric('gateway_connections', '{transport="ws",protocol="pusher"}')) === 0, { what: 'both closed' });
      expect(gw.logs.some((l) => l.msg?.includes('uncaught'))).to.equal(false);
    } finally {
      await gw.stop();
    }
  });
});

describe('Pusher at the door', function () {
  this.timeout(30000);
  it('refuses a connection over --max-connections with pusher:error and close 4100 (back off), counting nothing', async () => {
    const gw = await startPusherGateway(['--workers', '1', '--max-connections', '1']);
    try {
      const held = await RawPusher.open(gw);
      await held.socketId();
      const over = await RawPusher.open(gw);
      expect((await over.event('pusher:error')).data.code).to.equal(4100);
      expect((await over.closed).code).to.equal(4100);
      expect(await gw.metric('gateway_connections', '{transport="ws",protocol="pusher"}')).to.equal(1);
      held.close();
    } finally {
      await gw.stop();
    }
  });

  it('refuses an Origin not allowed with pusher:error and close 4009 (a browser cannot read an HTTP refusal)', async () => {
    const gw = await startPusherGateway(['--allowed-origins', 'https://app.example.com']);
    try {
      const raw = await RawPusher.open(gw, { origin: 'https://evil.example.com' });
      expect((await raw.event('pusher:error')).data.code).to.equal(4009);
      expect((await raw.closed).code).to.equal(4009);
      const ok = await RawPusher.open(gw, { origin: 'https://app.example.com' });
      await ok.socketId();
      ok.close();
      expect(await gw.metric('gateway_upgrades_rejected_total', '{reason="origin"}')).to.equal(1);
    } finally {
      await gw.stop();
    }
  });

  it('answers /app/ and /apps/ with 404 when no app is configured', async () => {
    const gw = await startGateway();
    try {
      expect((await gw.request('/apps/1/events', { method: 'POST', body: '{}' })).status).to.equal(404);
      const refused = await RawPusher.open(gw).catch((err) => err);
      expect(String(refused.message)).to.include('404');
    } finally {
      await gw.stop();
    }
  });
});
