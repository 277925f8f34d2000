// Deltas against the real gateway (2 workers), on both engines: the frames a
// delta subscriber gets in JSON and MessagePack (whole first, then fossil
// deltas that rebuild the published data), the refusals, a resubscribe
// with `since` mid-stream, and the client library rebuilding 1,000 updates
// across a worker kill and the recovery that follows.
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { applyDelta } from 'fossil-delta';
import { startGateway, eventually } from '../../../scripts/harness/gateway.js';
import { OpenedClients, TestClient } from '../../helpers/client.js';
import { nodeClient, whenOpen } from '../../helpers/client-helpers.js';
import { startRedisNodes } from '../../helpers/redis-nodes.js';

const NAMESPACES = { namespaces: [{ name: 'state', delta: true }, { name: 'plain' }] };

function configFile() {
  const file = join(mkdtempSync(join(tmpdir(), 'deltas-')), 'gateway.json');
  writeFileSync(file, JSON.stringify(NAMESPACES));
  return file;
}

/** A ~2 KB state whose every update changes two fields. */
function states(count) {
  const state = { title: 'dashboard', rows: Array.from({ length: 40 }, (_, i) => ({ id: i, name: `row ${i} é`, value: i * 10 })) };
  const out = [];
  for (let n = 1; n <= count; n++) {
    state.rows[n % 40].value = n;
    state.updated = n;
    out.push(JSON.parse(JSON.stringify(state)));
  }
  return out;
}

/** Rebuilds a raw delta subscriber's messages as the client library does. */
function rebuild(messages) {
  let base;
  return messages.map((m) => {
    if (m.delta !== true) {
      base = Buffer.from(JSON.stringify(m.data));
      return m.data;
    }
    const delta = typeof m.data === 'string' ? Buffer.from(m.data, 'latin1') : m.data;
    base = Buffer.from(applyDelta(base, delta, { verifyChecksum: true }));
    return JSON.parse(base.toString());
  });
}

/** Publishes every state through `publisher` (a TestClient), one ack at a time, calling `at(i)` before each. */
async function publishAll(publisher, channel, list, at = () => {}) {
  for (let i = 0; i < list.length; i++) {
    await at(i);
    const ack = await publisher.publish(channel, list[i]);
    if (ack.type !== 'ack') throw new Error(`publish ${i} answered ${JSON.stringify(ack)}`);
  }
}

/**
 * The client library's delta subscribers (JSON and MessagePack) on the
 * subscriber gateway's worker that is then killed, while `publisher` keeps
 * publishing: what each handed over equals what was published.
 */
async function killScenario(subscriberGw, publisher, channel, avoid) {
  const list = states(1000);
  const address = await addressAwayFrom(subscriberGw, avoid);
  const clients = [nodeClient(subscriberGw.url, { localAddress: address }), nodeClient(subscriberGw.url, { localAddress: address, encoding: 'msgpack' })];
  try {
    const got = clients.map(() => []);
    const gaps = [];
    const reconnects = clients.map(() => 0);
    const errors = [];
    clients.forEach((c, i) => c.on('state', (state) => state === 'reconnecting' && reconnects[i]++));
    for (const c of clients) c.on('error', (err) => errors.push(err.message));
    await Promise.all(clients.map((c) => whenOpen(c)));
    await Promise.all(clients.map((c, i) => c.subscribe(channel, { delta: true }, (data) => got[i].push(data))));
    for (const c of clients) c.on('gap', (gap) => gaps.push(gap));
    const worker = clients[0].welcome.worker;
    expect(clients[1].welcome.worker).to.equal(worker);
    const before = clients.map((c) => c.welcome.connectionId);
    await publishAll(publisher, channel, list, async (i) => {
      if (i === 400) process.kill(subscriberGw.workerPid(worker), 'SIGKILL');
      // Message 401 (seq) is recovered; the rest go live, as deltas again.
      if (i === 401) await eventually(() => clients.every((c, k) => c.welcome !== undefined && c.welcome.connectionId !== before[k]), { what: 'both reconnected', timeout: 15000 });
    });
    for (let i = 0; i < clients.length; i++) {
      await eventually(() => got[i].length === list.length, { what: `client ${i} has every update (${got[i].length})`, timeout: 20000 });
      expect(got[i]).to.deep.equal(list);
    }
    expect(gaps).to.deep.equal([]);
    expect(errors).to.deep.equal([]); // a delta that did not apply would be one
    // Each resubscribed with since (a dial may land on the worker restarting: another then).
    for (const n of reconnects) expect(n).to.be.at.least(1);
  } finally {
    for (const c of clients) c.close();
  }
}

/** A source address whose connections land on another worker than `worker` (any, without one). */
async function addressAwayFrom(gw, worker) {
  for (let i = 7; i < 40; i++) {
    const probe = await TestClient.connect(gw.url, { localAddress: `127.0.0.${i}` });
    probe.close();
    if (probe.welcome.worker !== worker) return `127.0.0.${i}`;
  }
  throw new Error(`no source address reached a worker other than ${worker}`);
}

describe('deltas: fossil deltas of a channel that changes a little at a time', function () {
  let gw;
  const opened = new OpenedClients(() => gw.url);
  const connect = (options) => opened.connect(options);

  before(async () => {
    gw = await startGateway(['--config', configFile(), '--max-publish-rate', '100000', '--history-size', '1000']);
  });
  afterEach(() => opened.closeAll());
  after(() => gw?.stop());

  it('sends a delta subscriber its first message whole, then deltas that rebuild the data, in both encodings', async () => {
    const list = states(30);
    const json = await connect({ localAddress: '127.0.0.2' });
    const msgpack = await connect({ localAddress: '127.0.0.3', encoding: 'msgpack' });
    const plain = await connect({ localAddress: '127.0.0.4' });
    for (const c of [json, msgpack]) expect(await c.request({ type: 'subscribe', channel: 'state:a', delta: 'fossil' })).to.include({ type: 'ack' });
    await plain.subscribe('state:a');
    const publisher = await connect({ localAddress: '127.0.0.5' });
    await publishAll(publisher, 'state:a', list);
    for (const c of [json, msgpack, plain]) await c.next(() => c.messages('state:a').length === list.length);

    for (const c of [json, msgpack]) {
      const messages = c.messages('state:a');
      expect(messages[0].delta).to.equal(undefined);
      expect(messages.slice(1).every((m) => m.delta === true)).to.equal(true);
      expect(messages.map((m) => m.seq)).to.deep.equal(list.map((_, i) => i + 1));
      expect(rebuild(messages)).to.deep.equal(list);
      // A delta is much smaller than the data it stands for.
      expect(messages[5].data.length).to.be.below(JSON.stringify(list[5]).length / 10);
    }
    expect(typeof json.messages('state:a')[1].data).to.equal('string');
    expect(msgpack.messages('state:a')[1].data).to.be.an.instanceof(Uint8Array);
    expect(plain.messages('state:a').map((m) => m.data)).to.deep.equal(list);
    expect(await gw.metric('gateway_deltas_total', '{result="sent"}')).to.be.at.least(2 * 29);
    expect(await gw.metric('gateway_deltas_total', '{result="full"}')).to.be.at.least(2);
  });

  it('sends binary data and a message no smaller as a delta whole', async () => {
    const sub = await connect({ encoding: 'msgpack' });
    await sub.request({ type: 'subscribe', channel: 'state:mixed', delta: 'fossil' });
    await sub.publish('state:mixed', { a: 'x'.repeat(200) });
    await sub.publish('state:mixed', Uint8Array.from([1, 2, 3]));
    await sub.publish('state:mixed', { a: 'x'.repeat(200) }); // after bytes: whole
    await sub.publish('state:mixed', 1); // a delta would be longer than "1"
    await sub.next(() => sub.messages('state:mixed').length === 4);
    expect(sub.messages('state:mixed').map((m) => m.delta)).to.deep.equal([undefined, undefined, undefined, undefined]);
  });

  it('refuses an unknown algorithm and a namespace without deltas with bad_request, the connection kept', async () => {
    const client = await connect();
    const unknown = await client.request({ type: 'subscribe', channel: 'state:b', delta: 'vcdiff' });
    expect(unknown).to.include({ type: 'error', code: 'bad_request' });
    expect(unknown.message).to.include('fossil');
    const plain = await client.request({ type: 'subscribe', channel: 'plain:b', delta: 'fossil' });
    expect(plain).to.include({ type: 'error', code: 'bad_request' });
    expect(plain.message).to.include('namespace plain does not offer them');
    const top = await client.request({ type: 'subscribe', channel: 'nons', delta: 'fossil' });
    expect(top).to.include({ type: 'error', code: 'bad_request' });
    expect(top.message).to.include('channels outside namespaces do not offer them');
    expect(await client.request({ type: 'subscribe', channel: 'plain:b' })).to.include({ type: 'ack' });
  });

  it('gives a delta subscriber that resubscribes with since the replay and the next message whole, then deltas', async () => {
    const list = states(20);
    const publisher = await connect({ localAddress: '127.0.0.5' });
    const first = await connect({ localAddress: '127.0.0.2' });
    const ack = await first.request({ type: 'subscribe', channel: 'state:since', delta: 'fossil' });
    await publishAll(publisher, 'state:since', list.slice(0, 8));
    await first.next(() => first.messages('state:since').length === 8);
    const held = first.messages('state:since');
    first.close();
    await publishAll(publisher, 'state:since', list.slice(8, 12));

    const again = await connect({ localAddress: '127.0.0.3' });
    const since = { seq: 8, epoch: ack.epoch };
    expect(await again.request({ type: 'subscribe', channel: 'state:since', since, delta: 'fossil' })).to.include({ recovered: true, seq: 12 });
    await again.next(() => again.messages('state:since').length === 4);
    await publishAll(publisher, 'state:since', list.slice(12));
    await again.next(() => again.messages('state:since').length === 12);
    const resumed = again.messages('state:since');
    // The replay (9-12) and the first live message (13) whole, deltas after.
    expect(resumed.map((m) => m.delta === true)).to.deep.equal([false, false, false, false, false, true, true, true, true, true, true, true]);
    expect(rebuild([...held, ...resumed])).to.deep.equal(list);
  });

  it('rebuilds 1,000 updates in the client library, JSON and MessagePack, across a worker kill and its recovery', async () => {
    const publisher = await connect({ localAddress: '127.0.0.20' });
    await killScenario(gw, publisher, 'state:kill', publisher.welcome.worker); // the kill spares the publisher
    expect(await gw.metric('gateway_deltas_total', '{result="sent"}')).to.be.above(1000);
  });
});

describe('deltas under the Redis engine', function () {
  let redis;
  let nodes;
  before(async function () {
    ({ redis, nodes } = await startRedisNodes(['--config', configFile(), '--max-publish-rate', '100000', '--history-size', '1000']));
  });
  after(async () => {
    await Promise.all((nodes ?? []).map((n) => n.stop()));
    await redis?.stop();
  });

  it('rebuilds 1,000 updates published on another node, across a worker kill and its recovery', async () => {
    const publisher = await TestClient.connect(nodes[0].url);
    try {
      await killScenario(nodes[1], publisher, 'state:redis');
    } finally {
      publisher.close();
    }
  });
});
