// lib/client in Node against the real gateway (and, for close codes the
// gateway has no reason to send, against a bare ws server).
import { expect } from 'chai';
import { once } from 'node:events';
import net from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import { State, ClientErrorCode, ErrorCode } from '../../../lib/client/index.js';
import { startGateway, eventually } from '../../../scripts/harness/gateway.js';
import { API_KEY, httpPublish, nodeClient, whenOpen, clientAwayFrom } from '../../helpers/client-helpers.js';

const PING_INTERVAL = 400;

describe('client against the gateway', function () {
  this.timeout(60000);
  let gw;
  const clients = [];
  const open = (options) => {
    const client = nodeClient(gw.url, options);
    clients.push(client);
    return client;
  };

  before(async () => {
    gw = await startGateway([
      '--api-key', API_KEY, '--ping-interval', String(PING_INTERVAL), '--max-publish-rate', '5', '--max-payload', '1024'
    ]);
  });
  after(() => gw?.stop());
  afterEach(() => {
    for (const client of clients.splice(0)) client.close();
  });

  it('subscribes, publishes and receives in seq order, resolving each publish on its ack', async () => {
    const [publisher, subscriber] = [open(), open()];
    const got = [];
    await subscriber.subscribe('orders', (data, { seq }) => got.push([data.n, seq]));
    await publisher.publish('orders', { n: 1 });
    await publisher.publish('orders', { n: 2 });
    await eventually(() => got.length === 2, { what: 'both messages' });
    expect(got.map(([n]) => n)).to.deep.equal([1, 2]);
    expect(got[1][1]).to.equal(got[0][1] + 1);
  });

  it('sends no token to a gateway under --auth none, and works as without one', async () => {
    const relay = await recordingRelay(gw.url);
    const client = nodeClient(relay.url, { token: 'a.b.c' });
    try {
      const got = [];
      await client.subscribe('tokenless', (data) => got.push(data));
      await client.publish('tokenless', 1);
      await eventually(() => got.length === 1, { what: 'the message' });
      const types = relay.sent.map((frame) => JSON.parse(frame).type);
      expect(types).to.include.members(['subscribe', 'publish']); // the relay saw the client's frames
      expect(types).to.not.include('auth');
      expect(relay.sent.join('\n')).to.not.include('a.b.c');
    } finally {
      client.close();
      await relay.close();
    }
  });

  it('rejects a publish with the code the gateway answers', async () => {
    const client = open();
    await whenOpen(client);
    const results = await Promise.allSettled(Array.from({ length: 20 }, (_, n) => client.publish('burst', { n })));
    const codes = results.filter((r) => r.status === 'rejected').map((r) => r.reason.code);
    expect(codes.length).to.be.above(0);
    expect(new Set(codes)).to.deep.equal(new Set([ErrorCode.RATE_LIMITED]));

    const err = await client.publish('bad channel!', 1).catch((e) => e);
    expect(err.code).to.equal(ErrorCode.INVALID_CHANNEL);
  });

  it('rejects a publish over --max-payload with payload_too_large and stays usable', async () => {
    const client = open();
    await whenOpen(client);
    const [small, big] = await Promise.allSettled([client.publish('big', 'small'), client.publish('big', 'x'.repeat(4096))]);
    expect(big.reason.code).to.equal(ErrorCode.PAYLOAD_TOO_LARGE);
    // Sent just before it: acked, or lost with the connection, never blamed.
    if (small.status === 'rejected') expect(small.reason.code).to.equal(ClientErrorCode.DISCONNECTED);
    await whenOpen(client);
    await client.publish('big', 'small');
  });

  it('queues publishes made before the welcome up to maxQueued, then rejects with queue_full', async () => {
    const subscriber = open();
    const got = [];
    await subscriber.subscribe('queued', (data) => got.push(data));
    const client = open({ maxQueued: 2 });
    expect(client.state).to.equal(State.CONNECTING);
    const queued = [client.publish('queued', 'a'), client.publish('queued', 'b')];
    const err = await client.publish('queued', 'c').catch((e) => e);
    expect(err.code).to.equal(ClientErrorCode.QUEUE_FULL);
    await Promise.all(queued);
    await eventually(() => got.length === 2, { what: 'the queued messages' });
    expect(got).to.deep.equal(['a', 'b']);
  });

  it('rejects queued publishes with closed on close(), and everything after', async () => {
    const client = open();
    const queued = client.publish('later', 1);
    client.close();
    expect(client.state).to.equal(State.CLOSED);
    expect((await queued.catch((e) => e)).code).to.equal(ClientErrorCode.CLOSED);
    expect((await client.publish('later', 2).catch((e) => e)).code).to.equal(ClientErrorCode.CLOSED);
    expect((await client.subscribe('later', () => {}).catch((e) => e)).code).to.equal(ClientErrorCode.CLOSED);
  });

  it('reconnects after its worker is SIGKILLed, resubscribes and receives again', async () => {
    const client = open();
    const got = [];
    await client.subscribe('crash', (data) => got.push(data));
    const before = await whenOpen(client);
    await httpPublish(gw, 'crash', 'before');
    await eventually(() => got.includes('before'), { what: 'message before the kill' });

    const states = [];
    client.on('state', (state) => states.push(state));
    process.kill(gw.workerPid(before.worker), 'SIGKILL');
    await eventually(() => states.includes(State.OPEN), { what: 'reconnected', timeout: 15000 });
    expect(states[0]).to.equal(State.RECONNECTING);
    // The resubscribe is on its way with the welcome; publish until it took.
    await eventually(async () => {
      await httpPublish(gw, 'crash', 'after');
      return got.includes('after');
    }, {
      what: 'message after the reconnect',
      timeout: 15000,
      interval: 200
    });
  });

  it('declares the connection dead when its worker stops answering, then recovers what it missed', async () => {
    const client = open();
    const got = [];
    const gaps = [];
    const recoveries = [];
    client.on('gap', (gap) => gaps.push(gap));
    client.on('recovered', (r) => recoveries.push(r));
    await client.subscribe('stall', (data, { seq }) => got.push({ data, seq }));
    const { worker } = await whenOpen(client);
    const publisher = await clientAwayFrom(gw.url, worker);
    clients.push(publisher);
    await publisher.publish('stall', 'first');
    await eventually(() => got.length === 1, { what: 'first message' });

    const pid = gw.workerPid(worker);
    const dead = new Promise((resolve) => client.on('state', (state, detail) => state === State.RECONNECTING && resolve(detail)));
    const stoppedAt = Date.now();
    process.kill(pid, 'SIGSTOP');
    try {
      const detail = await dead;
      expect(detail.reason).to.match(/no pong/);
      expect(Date.now() - stoppedAt).to.be.below(3 * PING_INTERVAL + 500);
      // Published while the client is away: its worker (stopped) still has
      // the old subscription, the client no connection to receive it on.
      await publisher.publish('stall', 'missed');
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    await whenOpen(client);
    await publisher.publish('stall', 'next');
    await eventually(() => got.length === 3, { what: 'the missed message and the next one', timeout: 15000 });
    expect(got).to.deep.equal([
      { data: 'first', seq: 1 },
      { data: 'missed', seq: 2 },
      { data: 'next', seq: 3 }
    ]);
    expect(gaps).to.deep.equal([]);
    expect(recoveries).to.deep.equal([{ channel: 'stall', from: 2, to: 2 }]);
  });

  it('reports a gap when the gateway cannot replay what was missed', async () => {
    const small = await startGateway(['--ping-interval', String(PING_INTERVAL), '--history-size', '3']);
    const client = nodeClient(small.url);
    try {
      const got = [];
      const gaps = [];
      client.on('gap', (gap) => gaps.push(gap));
      await client.subscribe('overflow', (data, { seq }) => got.push(seq));
      const { worker } = await whenOpen(client);
      const publisher = await clientAwayFrom(small.url, worker);
      clients.push(publisher);
      const pid = small.workerPid(worker);
      const dead = new Promise((resolve) => client.on('state', (state) => state === State.RECONNECTING && resolve()));
      process.kill(pid, 'SIGSTOP');
      try {
        await dead;
        for (let i = 1; i <= 5; i++) await publisher.publish('overflow', i); // more than the history holds
      } finally {
        process.kill(pid, 'SIGCONT');
      }
      await eventually(() => gaps.length > 0, { what: 'gap event', timeout: 15000 });
      expect(gaps).to.deep.equal([{ channel: 'overflow', expected: 1, got: 5 }]);
      await publisher.publish('overflow', 6);
      await eventually(() => got.length === 1, { what: 'the next live message' });
      expect(got).to.deep.equal([6]);
    } finally {
      client.close();
      await small.stop();
    }
  });

  it('waits a jittered, capped, growing delay between failed attempts', async () => {
    const port = await closedPort();
    const retrying = nodeClient(`ws://127.0.0.1:${port}/ws`, { backoffBase: 10, backoffCap: 80 });
    clients.push(retrying);
    const delays = [];
    retrying.on('state', (state, { delay }) => state === State.RECONNECTING && delays.push(delay));
    await eventually(() => delays.length >= 8, { what: 'eight attempts' });
    delays.forEach((delay, attempt) => expect(delay).to.be.within(0, Math.min(80, 10 * 2 ** attempt)));
    expect(new Set(delays).size).to.equal(delays.length); // drawn, not fixed
  });
});

describe('client close codes', function () {
  let server;
  let connections = 0;
  let closeWith;

  before(async () => {
    server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await once(server, 'listening');
    server.on('connection', (ws) => {
      connections++;
      ws.send(JSON.stringify({ type: 'welcome', connectionId: String(connections), worker: 1, pingInterval: 60000 }));
      if (closeWith !== undefined) ws.close(closeWith, 'test');
    });
  });
  after(() => server.close());

  const url = () => `ws://127.0.0.1:${server.address().port}/ws`;

  it('stops for good on 1008 and says why', async () => {
    closeWith = 1008;
    const client = nodeClient(url());
    const errors = [];
    client.on('error', (err) => errors.push(err));
    await eventually(() => client.state === State.CLOSED, { what: 'closed' });
    expect(errors.map((e) => [e.code, e.closeCode])).to.deep.equal([[ClientErrorCode.CLOSED, 1008]]);
  });

  for (const code of [1001, 1012, 1013]) {
    it(`comes back after ${code}`, async () => {
      closeWith = code;
      const before = connections;
      const client = nodeClient(url(), { backoffBase: 5 });
      try {
        await eventually(() => connections >= before + 2, { what: 'a second connection' });
        expect(client.state).to.not.equal(State.CLOSED);
      } finally {
        client.close();
      }
    });
  }
});

/**
 * A ws server that relays each connection to `target` (the real gateway) and
 * records the text frames the client sent, so a test sees what went on the wire.
 */
async function recordingRelay(target) {
  const server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await once(server, 'listening');
  const sent = [];
  const upstreams = new Set();
  server.on('connection', (down) => {
    const up = new WebSocket(target);
    upstreams.add(up);
    const early = [];
    up.on('open', () => early.splice(0).forEach((frame) => up.send(frame)));
    up.on('message', (data) => down.send(String(data)));
    up.on('close', () => (upstreams.delete(up), down.close()));
    up.on('error', () => down.terminate());
    down.on('message', (data) => {
      sent.push(String(data));
      if (up.readyState === WebSocket.OPEN) up.send(String(data));
      else early.push(String(data));
    });
    down.on('close', () => up.terminate());
  });
  return {
    url: `ws://127.0.0.1:${server.address().port}/ws`,
    sent,
    close() {
      for (const ws of [...server.clients, ...upstreams]) ws.terminate();
      return new Promise((resolve) => server.close(resolve));
    }
  };
}

function closedPort() {
  const server = net.createServer().listen(0, '127.0.0.1');
  return once(server, 'listening').then(() => {
    const { port } = server.address();
    return new Promise((resolve) => server.close(() => resolve(port)));
  });
}
