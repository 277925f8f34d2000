// Keepalive, manual GC, supervision, drain and capacity limits, against the
// real gateway's processes.
import net from 'node:net';
import { readFileSync } from 'node:fs';
import WebSocket from 'ws';
import { expect } from 'chai';
import { startGateway, eventually } from '../../../scripts/harness/gateway.js';
import { TestClient } from '../../helpers/client.js';
import { SseReader } from '../../helpers/sse.js';

const readies = (gw, worker) => gw.logs.filter((l) => l.msg === 'worker ready' && l.worker === worker);
const readyPid = (gw, worker) => gw.workerPid(worker);

/** Kills a worker and resolves once its slot has a new ready worker. */
async function killAndAwaitRespawn(gw, worker) {
  const count = readies(gw, worker).length;
  process.kill(readyPid(gw, worker), 'SIGKILL');
  await eventually(() => readies(gw, worker).length > count, { what: `worker ${worker} respawned` });
}

describe('keepalive', function () {
  let gw;
  before(async () => {
    gw = await startGateway(['--ping-interval', '400']);
  });
  after(() => gw.stop());

  it('terminates a peer that stops answering pings and keeps one that answers', async () => {
    const mute = await TestClient.connect(gw.url, { autoPong: false });
    const healthy = await TestClient.connect(gw.url);
    const started = Date.now();
    const { code } = await mute.closed;
    const elapsed = Date.now() - started;
    expect(code).to.equal(1006); // terminated: no close frame
    expect(elapsed).to.be.below(3 * 400 + 500); // within about two intervals
    expect(healthy.ws.readyState).to.equal(WebSocket.OPEN);
    expect(await gw.metric('gateway_peers_terminated_total')).to.be.at.least(1);
    expect(await gw.metric('gateway_pings_sent_total')).to.be.at.least(2);
    healthy.close();
  });

  it('counts protocol pings as liveness for clients that cannot see ping frames', async () => {
    const browserLike = await TestClient.connect(gw.url, { autoPong: false });
    const timer = setInterval(() => browserLike.send({ type: 'ping' }), 150);
    try {
      // Five intervals: a peer judged by ping frames alone would be gone after two.
      await eventually(() => browserLike.frames.filter((f) => f.type === 'pong').length >= 13, { timeout: 5000 });
      expect(browserLike.ws.readyState).to.equal(WebSocket.OPEN);
    } finally {
      clearInterval(timer);
      browserLike.close();
    }
  });
});

describe('periodic manual GC', function () {
  let gw;
  after(() => gw.stop());

  it('collects on every worker and exports runs and pauses', async () => {
    gw = await startGateway(['--gc-interval', '200']);
    await eventually(async () => (await gw.metric('gateway_gc_runs_total')) >= 6, { timeout: 5000, what: '6 GC runs' });
    const text = await gw.metrics();
    const count = Number(/^gateway_gc_pause_seconds_count (\S+)/m.exec(text)[1]);
    const sum = Number(/^gateway_gc_pause_seconds_sum (\S+)/m.exec(text)[1]);
    expect(count).to.be.at.least(6);
    expect(sum).to.be.above(0);
    await eventually(async () => (await gw.request('/stats', { port: gw.metricsPort })).body.workers?.every((w) => w.gcRuns > 0), {
      what: 'both workers report GC runs'
    });
  });

  it('is off with --gc-interval 0', async () => {
    const off = await startGateway(['--gc-interval', '0']);
    try {
      await eventually(async () => (await off.request('/stats', { port: off.metricsPort })).body.workers?.length === 2, { what: 'stats from both workers' });
      expect(await off.metric('gateway_gc_runs_total')).to.equal(0);
    } finally {
      await off.stop();
    }
  });
});

describe('supervision', function () {
  let gw;
  before(async () => {
    gw = await startGateway(['--drain-timeout', '300']);
  });
  after(() => gw.stop());

  it('restarts a killed worker; the other worker\'s subscribers keep receiving', async () => {
    const clients = await Promise.all(
      Array.from({ length: 16 }, (_, i) => TestClient.connect(gw.url, { localAddress: `127.0.0.${i + 1}` }))
    );
    await Promise.all(clients.map((c) => c.subscribe('live')));
    const victims = clients.filter((c) => c.welcome.worker === 1);
    const survivors = clients.filter((c) => c.welcome.worker === 2);
    expect(victims).to.not.be.empty;
    expect(survivors).to.not.be.empty;

    await killAndAwaitRespawn(gw, 1);
    await Promise.all(victims.map((c) => c.closed));
    expect(await gw.metric('gateway_worker_restarts_total')).to.equal(1);
    await eventually(async () => (await gw.metric('gateway_workers')) === 2, { what: '2 live workers' });

    // A survivor publishes; every survivor gets it, and the relay has forgotten the dead worker.
    await survivors[0].publish('live', 'after');
    await Promise.all(survivors.map((c) => c.next((f) => f.type === 'message' && f.data === 'after')));
    // The new worker 1 serves its IPs again and routes too.
    const back = await TestClient.connect(gw.url, { localAddress: `127.0.0.${clients.indexOf(victims[0]) + 1}` });
    expect(back.welcome.worker).to.equal(1);
    await back.subscribe('live');
    await survivors[0].publish('live', 'again');
    await back.next((f) => f.type === 'message' && f.data === 'again');
    for (const c of [...survivors, back]) c.close();
  });

  it('backs off exponentially when a worker keeps dying young', async () => {
    const deaths = () => gw.logs.filter((l) => l.msg === 'worker died' && l.worker === 2);
    const before = deaths().length;
    for (let i = 0; i < 3; i++) await killAndAwaitRespawn(gw, 2);
    const delays = deaths().slice(before).map((l) => l.retryInMs);
    expect(delays).to.have.length(3);
    expect(delays[1]).to.equal(delays[0] * 2);
    expect(delays[2]).to.equal(delays[1] * 2);
  });

  it('replaces workers one at a time on SIGHUP while the port keeps accepting', async () => {
    const before = [readyPid(gw, 1), readyPid(gw, 2)];
    const old = await TestClient.connect(gw.url);
    gw.signal('SIGHUP');
    expect((await old.closed).code).to.equal(1001);
    // Connections keep being accepted throughout the rolling restart.
    const during = [];
    const deadline = Date.now() + 15000;
    while (!gw.logs.some((l) => l.msg === 'rolling restart done') && Date.now() < deadline) {
      const c = await TestClient.connect(gw.url);
      during.push(c.welcome.worker);
      c.close();
    }
    await gw.waitForLog((l) => l.msg === 'rolling restart done');
    const after = [readyPid(gw, 1), readyPid(gw, 2)];
    expect(after[0]).to.not.equal(before[0]);
    expect(after[1]).to.not.equal(before[1]);
    expect(during).to.not.be.empty;
    // A deploy is not a crash: only the four deaths above count.
    expect(await gw.metric('gateway_worker_restarts_total')).to.equal(4);
  });

  it('a worker killed as a rolling restart begins gets one replacement, not two', async () => {
    const killed = readyPid(gw, 1);
    const restarts = gw.logs.filter((l) => l.msg === 'rolling restart done').length;
    process.kill(killed, 'SIGKILL');
    gw.signal('SIGHUP');
    await eventually(() => gw.logs.filter((l) => l.msg === 'rolling restart done').length > restarts, { timeout: 20000, what: 'rolling restart done' });
    // One running worker per slot once the replaced ones have drained: a
    // second replacement of slot 1 would hold its clients for good.
    await eventually(() => runningChildren(gw.proc.pid).length === 2, { what: `2 workers (have ${runningChildren(gw.proc.pid).length})` });
    expect(readyPid(gw, 1)).to.not.equal(killed);
    expect(runningChildren(gw.proc.pid)).to.have.members([readyPid(gw, 1), readyPid(gw, 2)]);
  });
});

/** The pids of a process's children that are running (not zombies). */
function runningChildren(pid) {
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  return children.filter((child) => {
    try {
      const stat = readFileSync(`/proc/${child}/stat`, 'utf8');
      return stat[stat.lastIndexOf(')') + 2] !== 'Z';
    } catch {
      return false;
    }
  });
}

describe('graceful drain', function () {
  it('on SIGTERM: closes the port, answers /health 503, closes clients with 1001 and exits 0', async () => {
    const gw = await startGateway(['--drain-timeout', '1500']);
    const clients = await Promise.all(
      Array.from({ length: 20 }, (_, i) => TestClient.connect(gw.url, { localAddress: `127.0.0.${i + 1}` }))
    );
    const http = await KeepAliveHttp.open(gw.port);
    expect(await http.get('/health')).to.match(/^HTTP\/1\.1 200/);

    gw.signal('SIGTERM');
    const firstClose = await Promise.race(clients.map((c) => c.closed));
    expect(firstClose.code).to.equal(1001);
    // The first close may come from the other worker: this one drains a moment later, if not already.
    let health;
    await eventually(async () => /^HTTP\/1\.1 503/.test((health = await http.get('/health'))), { what: '/health 503 on the kept-alive connection' });
    expect(health).to.match(/^HTTP\/1\.1 503[^]*"draining"/);
    await expectRefused(gw.port);

    const closes = await Promise.all(clients.map((c) => c.closed));
    expect(closes.map((c) => c.code)).to.deep.equal(clients.map(() => 1001));
    const { code } = await gw.exited;
    expect(code).to.equal(0);
  });
});

describe('capacity', function () {
  let gw;
  afterEach(() => gw.stop());

  it('answers upgrades over --max-connections with 503', async () => {
    gw = await startGateway(['--workers', '1', '--max-connections', '2']);
    const held = [await TestClient.connect(gw.url), await TestClient.connect(gw.url)];
    const third = new TestClient(new WebSocket(gw.url));
    expect((await third.opened.catch((e) => e)).status).to.equal(503);
    held[0].close();
    await eventually(async () => (await gw.metric('gateway_connections')) === 1);
    const fourth = await TestClient.connect(gw.url);
    fourth.close();
    held[1].close();
  });

  it('counts WebSockets and SSE streams together against --max-connections, on both ways in', async () => {
    gw = await startGateway(['--workers', '1', '--max-connections', '2']);
    const sse = `${gw.http}/sse?channels=news`;
    const refusedUpgrade = async () => (await new TestClient(new WebSocket(gw.url)).opened.catch((e) => e)).status;
    // One of each: full.
    const ws = await TestClient.connect(gw.url);
    const stream = new SseReader(sse);
    expect((await stream.response).status).to.equal(200);
    expect(await refusedUpgrade()).to.equal(503);
    const refusedStream = await new SseReader(sse).response;
    expect(refusedStream.status).to.equal(503);
    expect(refusedStream.body.error).to.equal('over_capacity');
    // Two streams: full for an upgrade too.
    ws.close();
    await eventually(async () => (await gw.metric('gateway_connections')) === 1);
    const second = new SseReader(sse);
    expect((await second.response).status).to.equal(200);
    expect(await refusedUpgrade()).to.equal(503);
    expect((await new SseReader(sse).response).status).to.equal(503);
    // A stream gone frees its place for a WebSocket.
    stream.close();
    await eventually(async () => (await gw.metric('gateway_connections')) === 1);
    const again = await TestClient.connect(gw.url);
    again.close();
    second.close();
  });

  it('cuts a client that stops reading at --max-buffered; the others keep receiving', async () => {
    gw = await startGateway(['--workers', '1', '--max-buffered', '262144', '--max-publish-rate', '100000']);
    const slow = await TestClient.connect(gw.url);
    const normal = await TestClient.connect(gw.url);
    await slow.subscribe('firehose');
    await normal.subscribe('firehose');
    slow.ws._socket.pause(); // stops reading: the kernel buffers fill, then the gateway's queue grows

    const chunk = 'x'.repeat(60000);
    const total = 400; // 24 MB: more than loopback socket buffers hold
    // Paced in groups the normal client reads at once, so only the slow one falls behind.
    for (let i = 0; i < total; i += 4) {
      for (let j = i; j < i + 4; j++) normal.send({ type: 'publish', channel: 'firehose', data: { i: j, chunk } });
      await normal.next(() => normal.messages('firehose').length === i + 4);
    }
    expect(normal.messages('firehose').map((m) => m.data.i)).to.deep.equal([...Array(total).keys()]);
    expect(await gw.metric('gateway_messages_dropped_total', '{reason="slow_consumer"}')).to.equal(1);

    slow.ws._socket.resume();
    expect((await slow.closed).code).to.equal(1013);
    expect(slow.messages('firehose').length).to.be.below(total);
    normal.close();
  });
});

/** One HTTP/1.1 connection reused for several requests. */
class KeepAliveHttp {
  static open(port) {
    return new Promise((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1', () => resolve(new KeepAliveHttp(socket)));
      socket.on('error', reject);
    });
  }

  constructor(socket) {
    this.socket = socket;
  }

  get(path) {
    return new Promise((resolve) => {
      let text = '';
      const onData = (d) => {
        text += d;
        const [head, body = ''] = text.split('\r\n\r\n');
        const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (text.includes('\r\n\r\n') && body.length >= length) {
          this.socket.off('data', onData);
          resolve(text);
        }
      };
      this.socket.on('data', onData);
      this.socket.write(`GET ${path} HTTP/1.1\r\nHost: test\r\n\r\n`);
    });
  }
}

async function expectRefused(port) {
  await eventually(
    () =>
      new Promise((resolve) => {
        const socket = net.connect(port, '127.0.0.1');
        socket.on('connect', () => (socket.destroy(), resolve(false)));
        socket.on('error', (err) => resolve(err.code === 'ECONNREFUSED'));
      }),
    { what: 'listening port closed' }
  );
}

describe('relay backpressure', function () {
  let gw;
  after(() => gw.stop());

  it('refuses publishes while a worker cannot keep up, and recovers when it does', async () => {
    // The subscriber is sent what queued while its worker was stopped, faster than a loaded machine may let it read: not a slow consumer here.
    gw = await startGateway(['--max-publish-rate', '1000000', '--max-payload', '1048576', '--max-buffered', String(256 << 20)]);
    const clients = await Promise.all(
      Array.from({ length: 16 }, (_, i) => TestClient.connect(gw.url, { localAddress: `127.0.0.${i + 1}` }))
    );
    const subscriber = clients.find((c) => c.welcome.worker === 2);
    const publisher = clients.find((c) => c.welcome.worker === 1);
    await subscriber.subscribe('flood');
    process.kill(gw.workerPid(2), 'SIGSTOP'); // stops reading its IPC channel
    try {
      // Bursts of publishes until the primary's queue to worker 2 says busy.
      const busy = (f) => f.type === 'error' && f.code === 'rate_limited' && /busy/.test(f.message);
      await eventually(() => {
        for (let i = 0; i < 2000; i++) publisher.send({ type: 'publish', channel: 'flood', data: 'x'.repeat(200) });
        return publisher.frames.some(busy);
      }, { timeout: 30000, interval: 20, what: 'a busy refusal' });
    } finally {
      process.kill(gw.workerPid(2), 'SIGCONT');
    }
    // Worker 2 catches up, busy clears, and publishes are accepted and delivered again.
    await eventually(async () => (await publisher.publish('flood', 'after')).type === 'ack', { timeout: 20000, interval: 200 });
    await subscriber.next((f) => f.type === 'message' && f.data === 'after', 30000);
    for (const c of clients) c.close();
  });
});
