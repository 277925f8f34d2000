// TLS in the workers (--tls-cert/--tls-key) with a self-signed certificate
// made at test time: wss:// and https:// from Node, behind the sticky primary
// and behind a PROXY header, and wss:// from Chromium.
import https from 'node:https';
import net from 'node:net';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { chromium } from 'playwright-core';
import { startGateway } from '../../../scripts/harness/gateway.js';
import { TestClient } from '../../helpers/client.js';
import { proxyV1 } from '../../helpers/proxy.js';
import { selfSignedCert } from '../../helpers/certs.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

function httpsGet(url, ca) {
  return new Promise((resolve, reject) => {
    https
      .get(url, { ca }, (res) => {
        let body = '';
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode, body }));
      })
      .on('error', reject);
  });
}

describe('TLS in the workers', function () {
  let gw;
  let cert;
  let wss;
  const clients = [];

  before(async () => {
    cert = selfSignedCert();
    gw = await startGateway(['--tls-cert', cert.certPath, '--tls-key', cert.keyPath]);
    wss = `wss://127.0.0.1:${gw.port}/ws`;
  });
  after(async () => {
    for (const c of clients) c.close();
    await gw.stop();
  });

  it('serves wss:// on both workers, relaying between them', async () => {
    const byWorker = new Map();
    for (let i = 1; i <= 32 && byWorker.size < 2; i++) {
      const client = await TestClient.connect(wss, { ca: cert.cert, localAddress: `127.0.0.${i}` });
      clients.push(client);
      byWorker.set(client.welcome.worker, client);
    }
    expect([...byWorker.keys()].sort()).to.deep.equal([1, 2]);
    const [one, two] = [byWorker.get(1), byWorker.get(2)];
    expect((await two.subscribe('secure')).type).to.equal('ack');
    expect((await one.publish('secure', { over: 'tls' })).type).to.equal('ack');
    expect((await two.next((f) => f.type === 'message')).data).to.deep.equal({ over: 'tls' });
  });

  it('serves https:// and refuses a client that does not trust the certificate', async () => {
    expect(await httpsGet(`https://127.0.0.1:${gw.port}/health`, cert.cert)).to.deep.include({ status: 200 });
    const untrusting = await httpsGet(`https://127.0.0.1:${gw.port}/health`).catch((err) => err);
    expect(untrusting.code).to.match(/SELF_SIGNED|UNABLE_TO_VERIFY/);
  });

  it('answers plain text on the TLS port with a close, and keeps serving', async () => {
    const socket = net.connect(gw.port, '127.0.0.1');
    socket.on('error', () => {});
    socket.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
    await new Promise((resolve) => socket.on('close', resolve));
    expect(await httpsGet(`https://127.0.0.1:${gw.port}/health`, cert.cert)).to.deep.include({ status: 200 });
  });

  it('connects wss:// from Chromium', async function () {
    const profile = await mkdtemp(join(tmpdir(), 'gateway-chromium-'));
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'],
      ignoreHTTPSErrors: true // the certificate is self-signed
    });
    try {
      const page = context.pages()[0] ?? (await context.newPage());
      await page.goto(`https://127.0.0.1:${gw.port}/health`);
      const welcome = await page.evaluate(async (url) => {
        const { connect } = await import('/client.js');
        const client = connect(url);
        await new Promise((resolve) => client.on('state', (state) => state === 'open' && resolve()));
        await client.subscribe('from-chromium', () => {});
        const { worker } = client.welcome;
        client.close();
        return { worker, protocol: location.protocol };
      }, wss);
      expect(welcome).to.deep.include({ protocol: 'https:' });
      expect(welcome.worker).to.be.oneOf([1, 2]);
    } finally {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    }
  });
});

describe('TLS behind a PROXY header', function () {
  it('takes the client IP from the header and the TLS stream after it, read in the same chunk', async () => {
    const cert = selfSignedCert();
    const gw = await startGateway(['--tls-cert', cert.certPath, '--tls-key', cert.keyPath, '--proxy-protocol', '--max-conns-per-ip', '1']);
    // A TCP load balancer that sends the header and the ClientHello in one
    // write: the primary reads TLS bytes while looking for the header and must
    // hand them over with the socket.
    const balancer = net.createServer((downstream) => {
      downstream.on('error', () => {});
      downstream.once('data', (hello) => {
        const upstream = net.connect(gw.port, '127.0.0.1');
        upstream.on('error', () => downstream.destroy());
        upstream.write(Buffer.concat([proxyV1('203.0.113.9'), hello]));
        downstream.pipe(upstream).pipe(downstream);
      });
    });
    balancer.listen(0, '127.0.0.1');
    await once(balancer, 'listening');
    const url = `wss://127.0.0.1:${balancer.address().port}/ws`;
    try {
      const first = await TestClient.connect(url, { ca: cert.cert });
      expect((await first.request({ type: 'ping' })).type).to.equal('pong');
      // The same client IP again is over --max-conns-per-ip 1: the IP came from the header.
      const second = await TestClient.connect(url, { ca: cert.cert }).catch((e) => e);
      expect(second.status).to.equal(429);
      first.close();
    } finally {
      balancer.close();
      await gw.stop();
    }
  });
});
