// Balancing modes, PROXY protocol and client IPs, against 4 real workers.
import net from 'node:net';
import { expect } from 'chai';
import { startGateway, eventually } from '../../../scripts/harness/gateway.js';
import { TestClient } from '../../helpers/client.js';
import { proxyV1, proxyV2, connectThroughProxy } from '../../helpers/proxy.js';

const addresses = (n) => Array.from({ length: n }, (_, i) => `127.0.0.${i + 1}`);

async function workerOf(url, localAddress) {
  const c = await TestClient.connect(url, { localAddress });
  c.close();
  return c.welcome.worker;
}

function split(workers) {
  const counts = {};
  for (const w of workers) counts[w] = (counts[w] ?? 0) + 1;
  return counts;
}

describe('--balance ip (4 workers)', function () {
  let gw;
  before(async () => {
    gw = await startGateway(['--workers', '4', '--balance', 'ip']);
  });
  after(() => gw.stop());

  it('keeps one source IP on one worker', async () => {
    const workers = [];
    for (let i = 0; i < 20; i++) workers.push(await workerOf(gw.url, '127.0.0.1'));
    expect(new Set(workers).size).to.equal(1);
  });

  it('hands a burst of connections over, more than the hand-over keeps in flight per worker, each acknowledged: no stall', async () => {
    // 256 at once over 4 workers: about 64 a worker, past the 32 a line sends before an acknowledgement must come back.
    const clients = await Promise.all(Array.from({ length: 256 }, (_, i) => TestClient.connect(gw.url, { localAddress: `127.0.0.${(i % 32) + 1}` })));
    expect(clients.every((c) => c.welcome !== undefined)).to.equal(true);
    for (const c of clients) c.close();
    expect((await gw.metric('gateway_handover_stalls_total')) ?? 0).to.equal(0);
  });

  it('spreads 32 source IPs over all 4 workers', async () => {
    const workers = await Promise.all(addresses(32).map((a) => workerOf(gw.url, a)));
    expect(Object.keys(split(workers)).sort()).to.deep.equal(['1', '2', '3', '4']);
  });

  it('moves only the dead worker\'s IPs, and moves them back when it returns', async () => {
    const ips = addresses(32);
    const before = await Promise.all(ips.map((a) => workerOf(gw.url, a)));
    const pid = gw.workerPid(3);
    const respawned = gw.logs.filter((l) => l.msg === 'worker ready').length + 1;
    process.kill(pid, 'SIGKILL');
    // Some of these connect while worker 3 is down, some after its quick respawn: none may move
    // elsewhere. A connection in flight to the dying worker is closed; its client tries again.
    const retrying = async (a) => (await workerOf(gw.url, a).catch(() => null)) ?? retrying(a);
    const during = await Promise.all(ips.map(retrying));
    ips.forEach((ip, i) => {
      if (before[i] !== 3 && during[i] !== 3) expect(during[i], ip).to.equal(before[i]);
    });
    await eventually(() => gw.logs.filter((l) => l.msg === 'worker ready').length >= respawned, { what: 'worker 3 back' });
    const after = await Promise.all(ips.map((a) => workerOf(gw.url, a)));
    expect(after).to.deep.equal(before);
  });
});

describe('--balance ip with full workers', function () {
  let gw;
  after(() => gw.stop());

  it('sends an IP to its next-best worker once its own is full, then answers 503', async () => {
    gw = await startGateway(['--workers', '2', '--max-connections', '3']);
    const held = [];
    for (let i = 0; i < 6; i++) held.push(await TestClient.connect(gw.url, { localAddress: '127.0.0.1' }));
    const counts = split(held.map((c) => c.welcome.worker));
    expect(counts).to.deep.equal({ 1: 3, 2: 3 });
    const seventh = await TestClient.connect(gw.url, { localAddress: '127.0.0.1' }).catch((e) => e);
    expect(seventh.status).to.equal(503);
    for (const c of held) c.close();
  });
});

describe('--balance even (4 workers)', function () {
  let gw;
  after(() => gw.stop());

  it('spreads 400 connections from 127.0.0.1 within ±25% of even', async () => {
    gw = await startGateway(['--workers', '4', '--balance', 'even']);
    const clients = [];
    for (let i = 0; i < 400; i += 50) {
      clients.push(...(await Promise.all(Array.from({ length: 50 }, () => TestClient.connect(gw.url, { localAddress: '127.0.0.1' })))));
    }
    const counts = split(clients.map((c) => c.welcome.worker));
    expect(Object.keys(counts).sort()).to.deep.equal(['1', '2', '3', '4']);
    for (const n of Object.values(counts)) expect(n).to.be.within(75, 125);
    for (const c of clients) c.close();
  });
});

describe('--proxy-protocol (--balance ip)', function () {
  let gw;
  before(async () => {
    gw = await startGateway(['--workers', '4', '--proxy-protocol', '--proxy-timeout', '500', '--max-conns-per-ip', '3']);
  });
  after(() => gw.stop());

  const clientIps = Array.from({ length: 8 }, (_, i) => `198.51.100.${i * 29 + 7}`);

  for (const [version, header] of [['v1', proxyV1], ['v2', proxyV2]]) {
    it(`${version}: 8 client IPs from one source address reach several workers, each IP always the same`, async () => {
      const seen = new Map();
      for (const ip of clientIps) {
        for (let i = 0; i < 2; i++) {
          const c = await connectThroughProxy(gw.url, header(ip));
          expect(c.welcome.type).to.equal('welcome');
          expect(await c.request({ type: 'ping' })).to.include({ type: 'pong' });
          if (seen.has(ip)) expect(c.welcome.worker, ip).to.equal(seen.get(ip));
          seen.set(ip, c.welcome.worker);
          c.close();
        }
      }
      expect(new Set(seen.values()).size).to.be.at.least(2);
    });
  }
});

// What the header decides is the same whoever reads it: the primary (ip),
// or the worker the kernel gave the connection to (reuseport).
for (const balance of ['ip', 'reuseport']) {
  describe(`--proxy-protocol, header read ${balance === 'ip' ? 'by the primary' : 'in the worker'} (--balance ${balance})`, function () {
    let gw;
    before(async () => {
      gw = await startGateway(['--workers', '4', '--balance', balance, '--proxy-protocol', '--proxy-timeout', '500', '--max-conns-per-ip', '3']);
    });
    after(() => gw.stop());

    it('serves plain HTTP after a header, also when the request arrives in the same packet', async () => {
      const answer = await raw(gw.port, Buffer.concat([proxyV1('203.0.113.9'), Buffer.from('GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')]));
      expect(answer).to.match(/^HTTP\/1\.1 200[^]*"ok"/);
    });

    it('applies --max-conns-per-ip to the client IP from the header', async () => {
      const held = [];
      for (let i = 0; i < 3; i++) held.push(await connectThroughProxy(gw.url, proxyV2('192.0.2.77')));
      const fourth = await connectThroughProxy(gw.url, proxyV2('192.0.2.77')).catch((e) => e);
      expect(fourth.status).to.equal(429);
      const other = await connectThroughProxy(gw.url, proxyV2('192.0.2.78'));
      for (const c of [...held, other]) c.close();
    });

    it('closes garbage, oversized, truncated and never-completed headers without harming other connections', async () => {
      const bystander = await connectThroughProxy(gw.url, proxyV1('198.51.100.1'));
      const before = await gw.metrics();
      const bad = [
        ['proxy_missing', Buffer.from('GET /health HTTP/1.1\r\n\r\n')],
        ['proxy_missing', Buffer.from([0xde, 0xad, 0xbe, 0xef])],
        ['proxy_malformed', Buffer.from('PROXY TCP4 not.an.ip 10.0.0.1 1 2\r\n')],
        ['proxy_malformed', Buffer.from('PROXY TCP4 1.2.3.4 5.6.7.8 99999 1\r\n')],
        ['proxy_too_long', Buffer.from(`PROXY TCP4 ${'1'.repeat(120)}`)],
        ['proxy_too_long', Buffer.concat([proxyV2('1.2.3.4').subarray(0, 14), Buffer.from([0xff, 0xff])])],
        ['proxy_malformed', Buffer.concat([proxyV2('1.2.3.4').subarray(0, 13), Buffer.from([0x11, 0, 4, 1, 2, 3, 4])])],
        ['proxy_truncated', Buffer.from('PROXY TCP4 1.2.3.4')], // then the client ends the stream
        ['proxy_timeout', null] // connects and says nothing
      ];
      const answers = await Promise.all(bad.map(([, bytes]) => raw(gw.port, bytes)));
      expect(answers).to.deep.equal(bad.map(() => ''));
      await eventually(async () => {
        const text = await gw.metrics();
        return bad.every(([reason]) => count(text, reason) > count(before, reason));
      }, { what: 'every refusal counted by reason' });
      expect(await bystander.request({ type: 'ping' })).to.include({ type: 'pong' });
      expect((await gw.request('/health').catch((e) => e)).status).to.equal(undefined); // plain HTTP needs a header too
      bystander.close();
    });
  });
}

describe('--trust-forwarded', function () {
  let gw;
  after(() => gw.stop());

  it('takes the client IP for limits from the X-Forwarded-For entry the load balancer added', async () => {
    gw = await startGateway(['--workers', '1', '--trust-forwarded', '--max-conns-per-ip', '2']);
    const as = (xff) => TestClient.connect(gw.url, { headers: { 'X-Forwarded-For': xff } });
    const held = [await as('6.6.6.6, 192.0.2.10'), await as('7.7.7.7, 192.0.2.10')];
    const third = await as('8.8.8.8, 192.0.2.10').catch((e) => e);
    expect(third.status).to.equal(429);
    const other = await as('192.0.2.11');
    for (const c of [...held, other]) c.close();
  });
});

function count(text, reason) {
  const line = text.split('\n').find((l) => l.startsWith(`gateway_connections_refused_total{reason="${reason}"}`));
  return line ? Number(line.split(' ')[1]) : 0;
}

/** Sends bytes (or nothing, if null); resolves with what came back before the close. */
function raw(port, bytes) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      if (bytes === null) return;
      if (bytes.toString().startsWith('PROXY TCP4 1.2.3.4') && bytes.length < 20) socket.end(bytes);
      else socket.write(bytes);
    });
    let answer = '';
    socket.on('data', (d) => (answer += d));
    socket.on('close', () => resolve(answer));
    socket.on('error', (err) => (err.code === 'ECONNRESET' ? resolve(answer) : reject(err)));
    socket.setTimeout(5000, () => socket.destroy(new Error('not closed within 5 s')));
  });
}
