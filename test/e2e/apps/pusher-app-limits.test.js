// A Pusher app's own limits, from the config file's keys (the apps table's
// columns are the same fields), each refused as Pusher refuses it, on a real
// gateway with 2 workers (and on two Redis nodes: ./pusher-app-limits-redis.test.js): connections
// over maxConnections 4004 (exact across workers and nodes), client events
// past maxClientEventsPerSecond 4301, the HTTP API past its backend events
// per second 429, past the payload 413, past the batch size and the
// channels per event 400 (nothing published by a refused call), and a
// presence member's user_info past its size refused.
import { expect } from 'chai';
import WebSocket from 'ws';
import { startGateway } from '../../../scripts/harness/gateway.js';
import { configFile } from '../../helpers/api.js';
import { channelAuth, eventually, serverSdk, signedRequest } from '../../helpers/pusher.js';
import { admitted, LIMITED, open, status } from '../../helpers/pusher-limits.js';

describe('Pusher app limits', function () {
  this.timeout(60000);
  let gw;
  const raws = [];

  before(async () => {
    gw = await startGateway(['--balance', 'even', '--config', configFile({ pusherApps: [LIMITED] })]);
  });
  after(() => gw?.stop());
  afterEach(() => {
    for (const raw of raws.splice(0)) raw.close();
  });

  it('refuses a connection over the app\'s maxConnections with 4004, counted across workers, and takes one again after a close', async () => {
    const opened = [];
    for (let i = 0; i < 3; i++) opened.push(await open(gw));
    raws.push(...opened.map(({ raw }) => raw));
    expect(opened.map(({ result }) => result)).to.deep.equal(['established', 'established', 'established']);
    const workers = new Set(await Promise.all(opened.map(({ raw }) => raw.socketId().then((id) => id.split('.')[0]))));
    expect(workers.size).to.equal(2); // --balance even spread them over both workers
    const over = await open(gw);
    raws.push(over.raw);
    expect(over.result).to.equal(4004);
    expect((await over.raw.event('pusher:error')).data.code).to.equal(4004);
    opened[0].raw.close();
    await opened[0].raw.closed;
    await eventually(async () => {
      const again = await open(gw);
      raws.push(again.raw);
      return again.result === 'established';
    }, { what: 'a connection admitted after a close' });
  });

  it('counts the app\'s Ably connections with its Pusher ones (past maxConnections DISCONNECTED 40111), and its REST publishes as backend events', async () => {
    const ably = async () => {
      const ws = new WebSocket(`ws://127.0.0.1:${gw.port}/?v=6&format=json&key=${encodeURIComponent(`${LIMITED.appId}.${LIMITED.key}:${LIMITED.secret}`)}`);
      const first = new Promise((resolve) => ws.once('message', (data) => resolve(JSON.parse(String(data)))));
      raws.push({ close: () => ws.close() });
      return { ws, first: await first };
    };
    // The connections of the test before, closed as it ended, are all gone from the app's count first.
    await eventually(async () => ((await gw.metric('gateway_connections', `{transport="ws",protocol="pusher",app="${LIMITED.appId}"}`)) ?? 0) === 0, { what: 'the app with no connection' });
    const pushers = [await open(gw), await open(gw)];
    raws.push(...pushers.map(({ raw }) => raw));
    expect(pushers.map(({ result }) => result)).to.deep.equal(['established', 'established']);
    const inside = await ably();
    expect(inside.first.action).to.equal(4); // CONNECTED
    const over = await ably();
    expect(over.first).to.deep.include({ action: 6 }); // DISCONNECTED
    expect(over.first.error).to.include({ code: 40111, statusCode: 401 });
    await eventually(async () => (await gw.metric('gateway_connections', `{transport="ws",protocol="ably",app="${LIMITED.appId}"}`)) === 1, { what: 'the Ably connection counted under its app' });
    expect(await gw.metric('gateway_connections', `{transport="ws",protocol="pusher",app="${LIMITED.appId}"}`)).to.equal(2);
    // Ably's REST publishes are the app's backend events too: 6 messages in one call are past its 5 a second.
    const auth = { Authorization: `Basic ${Buffer.from(`${LIMITED.appId}.${LIMITED.key}:${LIMITED.secret}`).toString('base64')}`, 'Content-Type': 'application/json' };
    const post = (count) => fetch(`${gw.http}/channels/limited/messages`, { method: 'POST', headers: auth, body: JSON.stringify(Array.from({ length: count }, (_, i) => ({ name: 'n', data: i }))) });
    const refused = await post(6);
    expect(refused.status).to.equal(429);
    expect(refused.headers.get('x-ably-errorcode')).to.equal('42910');
    const history = await fetch(`${gw.http}/channels/limited/messages`, { headers: auth });
    expect(await history.json()).to.deep.equal([]);
  });

  it('refuses client events past the app\'s rate with 4301', async () => {
    const raw = await admitted(gw, raws);
    const socketId = await raw.socketId();
    raw.send({ event: 'pusher:subscribe', data: { channel: 'private-r', auth: channelAuth(`${socketId}:private-r`, LIMITED) } });
    await raw.event('pusher_internal:subscription_succeeded', 'private-r');
    for (let i = 0; i < 4; i++) raw.send({ event: 'client-x', channel: 'private-r', data: { i } });
    const error = await raw.event('pusher:error');
    expect(error.data.code).to.equal(4301);
    expect(error.data.message).to.include('over 2');
  });

  it('refuses HTTP API calls over the app\'s limits as Pusher does, publishing nothing', async () => {
    const raw = await admitted(gw, raws);
    raw.send({ event: 'pusher:subscribe', data: { channel: 'a' } });
    await raw.event('pusher_internal:subscription_succeeded', 'a');
    const post = (path, body) => signedRequest(gw, 'POST', `/apps/${LIMITED.appId}/${path}`, { app: LIMITED, body });
    const big = await post('events', { name: 'big', channel: 'a', data: 'x'.repeat(1025) });
    expect(big.status).to.equal(413);
    const channels = await post('events', { name: 'wide', channels: ['a', 'b', 'c'], data: '{}' });
    expect(channels.status).to.equal(400);
    expect(channels.body).to.include('1 to 2 channel names');
    const batch = await post('batch_events', { batch: [1, 2, 3].map(() => ({ name: 'many', channel: 'a', data: '{}' })) });
    expect(batch.status).to.equal(400);
    expect(batch.body).to.include('1 to 2 events');
    // 5 events a second: two calls of 2 channels pass, the third (2 more) does not, in the same second.
    const sdk = serverSdk(gw, LIMITED);
    await eventually(async () => {
      const second = Math.floor(Date.now() / 1000);
      const statuses = [];
      for (let i = 0; i < 3; i++) statuses.push(await status(sdk.trigger(['a', 'b'], 'rated', { i })));
      return Math.floor(Date.now() / 1000) === second && JSON.stringify(statuses) === '[200,200,429]';
    }, { what: 'three calls within one second: 200, 200, 429' });
    const marker = await post('events', { name: 'marker', channel: 'a', data: '{}' });
    expect([200, 429]).to.include(marker.status);
    await eventually(async () => (await status(sdk.trigger('a', 'marker', {}))) === 200, { what: 'the marker published' });
    await raw.event('marker', 'a');
    const names = raw.frames.map((f) => f.event);
    expect(names).not.to.include.members(['big', 'wide', 'many']);
  });

  it('refuses a presence member whose user_info is over the app\'s size', async () => {
    const raw = await admitted(gw, raws);
    const socketId = await raw.socketId();
    const channelData = JSON.stringify({ user_id: 'u', user_info: { bio: 'x'.repeat(1100) } });
    raw.send({ event: 'pusher:subscribe', data: { channel: 'presence-p', auth: channelAuth(`${socketId}:presence-p:${channelData}`, LIMITED), channel_data: channelData } });
    const error = await raw.event('pusher:subscription_error', 'presence-p');
    expect(error.data.error).to.include('user_info is over 1024 bytes');
  });
});
