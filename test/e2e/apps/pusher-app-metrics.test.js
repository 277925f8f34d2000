// Per-app metrics after a mixed load of three Pusher apps and native
// clients on one gateway (2 workers): each app's connections, messages in
// and out, bytes and HTTP API calls under its own `app` label, native
// traffic under app="native", each exact.
import { expect } from 'chai';
import { startGateway } from '../../../scripts/harness/gateway.js';
import { configFile } from '../../helpers/api.js';
import { httpPublish, nodeClient } from '../../helpers/client-helpers.js';
import { channelAuth, eventually, RawPusher, serverSdk } from '../../helpers/pusher.js';

const app = (n, more = {}) => ({ appId: `m${n}`, key: `m${n}-key`, secret: `metrics-app-secret-${n}-0123`, ...more });
const APPS = [app(1, { clientEvents: true }), app(2), app(3)];

describe('Per-app metrics', function () {
  this.timeout(60000);
  let gw;
  const closers = [];

  before(async () => {
    gw = await startGateway(['--balance', 'even', '--api-key', 'test-key', '--config', configFile({ pusherApps: APPS })]);
  });
  after(async () => {
    for (const close of closers) close();
    await gw?.stop();
  });

  const subscriber = async (one, channel, auth) => {
    const raw = await RawPusher.open(gw, { key: one.key });
    closers.push(() => raw.close());
    const socketId = await raw.socketId();
    raw.send({ event: 'pusher:subscribe', data: { channel, auth: auth ? channelAuth(`${socketId}:${channel}`, one) : undefined } });
    await raw.event('pusher_internal:subscription_succeeded', channel);
    return raw;
  };

  it('counts each app apart, and native traffic as app="native"', async () => {
    const [m1, m2, m3] = APPS;
    // m1: two subscribers of private-room, one client event (to the other one) and 3 HTTP API events (to both).
    const a = await subscriber(m1, 'private-room', true);
    const b = await subscriber(m1, 'private-room', true);
    a.send({ event: 'client-typing', channel: 'private-room', data: {} });
    await b.event('client-typing', 'private-room');
    for (let i = 0; i < 3; i++) expect((await serverSdk(gw, m1).trigger('private-room', 'e', { i })).status).to.equal(200);
    await eventually(() => a.frames.filter((f) => f.event === 'e').length === 3 && b.frames.filter((f) => f.event === 'e').length === 3, { what: "m1's events" });
    // m2: one subscriber, one HTTP API event to two channels (one of them unsubscribed).
    const c = await subscriber(m2, 'news');
    expect((await serverSdk(gw, m2).trigger(['news', 'other'], 'e', {})).status).to.equal(200);
    await c.event('e', 'news');
    // m3: one connection, nothing else; one bad HTTP API call (a wrong signature).
    const d = await RawPusher.open(gw, { key: m3.key });
    closers.push(() => d.close());
    await d.socketId();
    const bad = await serverSdk(gw, { ...m3, secret: 'not-the-secret-of-m3' })
      .trigger('x', 'e', {})
      .catch((err) => err);
    expect(bad.status).to.equal(401);
    // Native: one subscriber, one publish over HTTP.
    const native = nodeClient(gw.url);
    closers.push(() => native.close());
    let got;
    const delivered = new Promise((resolve) => (got = resolve));
    await native.subscribe('plain', got);
    await httpPublish(gw, 'plain', { x: 1 });
    await delivered;

    const value = (name, labels) => gw.metric(name, labels).then((v) => v ?? 0);
    await eventually(async () => (await value('gateway_connections', '{app="m1"}')) === 2, { what: 'gauge' });
    expect(await value('gateway_connections', '{protocol="pusher",app="m2"}')).to.equal(1);
    expect(await value('gateway_connections', '{protocol="pusher",app="m3"}')).to.equal(1);
    expect(await value('gateway_connections', '{protocol="native",app="native"}')).to.equal(1);
    // In: m1's client event and 3 events; m2's event to two channels; none of m3's.
    expect(await value('gateway_messages_published_total', '{app="m1"}')).to.equal(4);
    expect(await value('gateway_messages_published_total', '{app="m2"}')).to.equal(2);
    expect(await value('gateway_messages_published_total', '{app="m3"}')).to.equal(0);
    // Out: the client event to b, 3 events to a and b; m2's one.
    expect(await value('gateway_messages_delivered_total', '{app="m1"}')).to.equal(7);
    expect(await value('gateway_messages_delivered_total', '{app="m2"}')).to.equal(1);
    expect(await value('gateway_messages_delivered_total', '{app="native"}')).to.be.at.least(1);
    expect(await value('gateway_api_requests_total', '{method="pusher_events",code="ok",app="m1"}')).to.equal(3);
    expect(await value('gateway_api_requests_total', '{method="pusher_events",code="ok",app="m2"}')).to.equal(1);
    expect(await value('gateway_api_requests_total', '{method="pusher_events",code="unauthorized",app="m3"}')).to.equal(1);
    const bytes = await Promise.all(['m1', 'm2', 'm3'].map((id) => value('gateway_bytes_sent_total', `{app="${id}"}`)));
    expect(bytes[0]).to.be.above(bytes[1]);
    expect(bytes[1]).to.be.above(bytes[2]);
    expect(bytes[2]).to.be.above(0); // its connection_established
  });
});
