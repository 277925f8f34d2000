// Webhooks under the memory engine against a real endpoint (node:http, the
// signature checked with the secret): occupied/vacated follow a channel's
// subscribers over both workers and both transports, batches, a killed
// worker's channels, an endpoint that fails and recovers, bad flags.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { startGateway, eventually } from '../../../scripts/harness/gateway.js';
import { TestClient } from '../../helpers/client.js';
import { SseReader } from '../../helpers/sse.js';
import { WebhookEndpoint, WEBHOOK_SECRET } from '../../helpers/webhook-endpoint.js';
import { sleep } from '../../helpers/wait.js';

const GATEWAY = fileURLToPath(new URL('../../../bin/gateway.js', import.meta.url));

describe('webhooks: occupied and vacated (memory engine)', function () {
  this.timeout(60000);
  let endpoint;
  let gw;
  let clients = [];
  const connect = async (localAddress = '127.0.0.1') => {
    const client = await TestClient.connect(gw.url, { localAddress });
    clients.push(client);
    return client;
  };
  /** A client on the other worker than `worker`, and the source address that reaches it. */
  const awayFrom = async (worker) => {
    for (let i = 2; i < 40; i++) {
      const client = await connect(`127.0.0.${i}`);
      if (client.welcome.worker !== worker) return [client, `127.0.0.${i}`];
    }
    throw new Error('no address reaches the other worker');
  };

  before(async () => {
    endpoint = await WebhookEndpoint.start();
    gw = await startGateway(['--webhook-url', endpoint.url, '--webhook-secret', WEBHOOK_SECRET, '--max-subscriptions', '1000']);
  });
  afterEach(() => {
    for (const client of clients) client.close();
    clients = [];
    endpoint.failWith = 0;
  });
  after(async () => {
    await gw?.stop();
    endpoint?.close();
  });

  it('sends channel_occupied once for the first subscriber of any worker or transport, channel_vacated once after the last', async () => {
    const first = await connect();
    await first.subscribe('room');
    await eventually(() => endpoint.namesOn('room').length === 1, { what: 'occupied' });
    const [other, address] = await awayFrom(first.welcome.worker);
    await other.subscribe('room');
    const sse = await SseReader.open(`${gw.http}/sse?channels=room`, { localAddress: address });
    await first.request({ type: 'unsubscribe', channel: 'room' });
    other.close();
    // The marker: a channel occupied on each worker after; the queue keeps
    // order, so a vacated sent too early would arrive before its event.
    const [marker] = await awayFrom(first.welcome.worker);
    await Promise.all([first.subscribe('marker-a'), marker.subscribe('marker-b')]);
    await eventually(() => endpoint.namesOn('marker-a').length === 1 && endpoint.namesOn('marker-b').length === 1, { what: 'the markers' });
    expect(endpoint.namesOn('room')).to.deep.equal(['channel_occupied']);
    await sse.close();
    await eventually(() => endpoint.namesOn('room').length === 2, { what: 'vacated' });
    expect(endpoint.namesOn('room')).to.deep.equal(['channel_occupied', 'channel_vacated']);
    expect(endpoint.badSignatures).to.equal(0);
    const batch = endpoint.batches.find((b) => b.events.some((e) => e.channel === 'room'));
    expect(batch.timeMs).to.be.within(Date.now() - 60000, Date.now());
    expect(batch.events[0]).to.deep.equal({ name: 'channel_occupied', channel: 'room' });
  });

  it('batches a burst: at most 100 events a body, far fewer bodies than events', async () => {
    const client = await connect();
    const channels = Array.from({ length: 300 }, (_, i) => `burst-${i}`);
    const before = endpoint.batches.length;
    for (const channel of channels) client.send({ type: 'subscribe', channel });
    await eventually(() => endpoint.events.filter((e) => e.channel.startsWith('burst-')).length === 300, { what: '300 occupied' });
    const bodies = endpoint.batches.slice(before);
    expect(bodies.length).to.be.at.most(10);
    for (const body of bodies) expect(body.events.length).to.be.at.most(100);
    expect(endpoint.events.filter((e) => e.channel.startsWith('burst-')).map((e) => e.channel)).to.deep.equal(channels);
    expect(await gw.metric('gateway_webhook_events_total', '{result="sent"}')).to.be.at.least(300);
  });

  it("vacates a killed worker's channels", async () => {
    const client = await connect();
    await client.subscribe('doomed-1');
    await client.subscribe('doomed-2');
    await eventually(() => endpoint.namesOn('doomed-2').length === 1, { what: 'occupied' });
    const pid = gw.workerPid(client.welcome.worker);
    process.kill(pid, 'SIGKILL');
    await eventually(() => endpoint.namesOn('doomed-1').length === 2 && endpoint.namesOn('doomed-2').length === 2, { what: 'vacated' });
    expect(endpoint.namesOn('doomed-1')).to.deep.equal(['channel_occupied', 'channel_vacated']);
    await gw.waitForLog((l) => l.msg === 'worker ready' && l.worker === client.welcome.worker && l.workerPid !== pid, 20000);
  });

  it('holds events while the endpoint answers 500 and delivers every one, in order, once it is back', async () => {
    const client = await connect();
    endpoint.failWith = 500;
    const requestsBefore = endpoint.requests;
    const retriedBefore = (await gw.metric('gateway_webhook_events_total', '{result="retried"}')) ?? 0;
    const expected = [];
    for (let round = 0; round < 3; round++) {
      for (const channel of ['flaky-a', 'flaky-b']) {
        await client.subscribe(channel);
        await client.request({ type: 'unsubscribe', channel });
      }
      expected.push('channel_occupied', 'channel_vacated');
    }
    await eventually(() => endpoint.requests >= requestsBefore + 2, { what: 'a retry' });
    expect(endpoint.namesOn('flaky-a')).to.deep.equal([]);
    await sleep(2000); // failing for a few seconds
    endpoint.failWith = 0;
    await eventually(() => endpoint.namesOn('flaky-b').length === 6, { what: 'everything after the outage', timeout: 20000 });
    expect(endpoint.namesOn('flaky-a')).to.deep.equal(expected);
    expect(endpoint.namesOn('flaky-b')).to.deep.equal(expected);
    expect(await gw.metric('gateway_webhook_events_total', '{result="retried"}')).to.be.above(retriedBefore);
    expect(await gw.metric('gateway_webhook_events_total', '{result="dropped"}')).to.equal(undefined);
  });

  it('takes a redirect (not followed) and an endpoint that never answers (5 s) as failures, and retries', async () => {
    const client = await connect();
    endpoint.failWith = 302;
    const requestsBefore = endpoint.requests;
    await client.subscribe('moved');
    await eventually(() => endpoint.requests >= requestsBefore + 1, { what: 'the redirected attempt' });
    endpoint.failWith = 'hang';
    await eventually(() => endpoint.requests >= requestsBefore + 2, { what: 'the hung attempt', timeout: 5000 });
    await client.request({ type: 'unsubscribe', channel: 'moved' });
    endpoint.failWith = 0;
    await eventually(() => endpoint.namesOn('moved').length === 2, { what: 'both events after the hang', timeout: 20000 });
    expect(endpoint.namesOn('moved')).to.deep.equal(['channel_occupied', 'channel_vacated']);
    expect([...endpoint.paths]).to.deep.equal(['/hooks']);
  });
});

describe('webhooks: drain', function () {
  this.timeout(60000);
  it('sends the vacated of a draining gateway before it exits', async () => {
    const endpoint = await WebhookEndpoint.start();
    const gw = await startGateway(['--webhook-url', endpoint.url, '--webhook-secret', WEBHOOK_SECRET, '--drain-timeout', '200']);
    try {
      const client = await TestClient.connect(gw.url);
      await client.subscribe('closing');
      await eventually(() => endpoint.namesOn('closing').length === 1, { what: 'occupied' });
      gw.signal('SIGTERM');
      expect(await gw.exited).to.deep.equal({ code: 0, signal: null });
      expect(endpoint.namesOn('closing')).to.deep.equal(['channel_occupied', 'channel_vacated']);
    } finally {
      await gw.stop();
      endpoint.close();
    }
  });
});

describe('webhooks: flags', () => {
  const run = (args) => spawnSync(process.execPath, [GATEWAY, '--port', '0', '--metrics-port', '0', ...args], { encoding: 'utf8', timeout: 10000 });
  for (const [args, message] of [
    [['--webhook-url', 'ftp://example.com/hooks', '--webhook-secret', WEBHOOK_SECRET], '--webhook-url must be an http:// or https:// URL'],
    [['--webhook-url', 'http://127.0.0.1:1/hooks'], '--webhook-url needs --webhook-secret'],
    [['--webhook-secret', WEBHOOK_SECRET], '--webhook-secret needs --webhook-url'],
    [['--webhook-url', 'http://127.0.0.1:1/hooks', '--webhook-secret', 'short'], '--webhook-secret must be at least 32 characters'],
    [['--member-grace', '-5'], '--member-grace must be at least 0']
  ]) {
    it(`refuses ${args.join(' ')} at start`, () => {
      const { status, stderr } = run(args);
      expect(status).to.not.equal(0);
      expect(stderr).to.include(message);
    });
  }
});
