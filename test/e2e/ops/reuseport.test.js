// --balance reuseport: every worker listens on the public port itself and the
// kernel spreads the connections; the primary accepts nothing.
import net from 'node:net';
import http from 'node:http';
import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { expect } from 'chai';
import { startGateway, eventually, freePort } from '../../../scripts/harness/gateway.js';
import { reservePort } from '../../../lib/primary/reuseport.js';
import { SECRET, joseHs256 } from '../../helpers/tokens.js';
import { sleep } from '../../helpers/wait.js';

const GATEWAY = fileURLToPath(new URL('../../../bin/gateway.js', import.meta.url));
const addresses = (n) => Array.from({ length: n }, (_, i) => `127.0.0.${i + 1}`);

/** Opens a WebSocket; resolves {ws, worker} at its welcome, or {error} (an HTTP status or a socket error code). */
function dial(url, localAddress, timeout = 5000) {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { localAddress });
    const timer = setTimeout(() => done({ error: 'hung' }), timeout);
    const done = (result) => {
      clearTimeout(timer);
      if (result.error !== undefined) ws.terminate();
      resolve(result);
    };
    ws.once('message', (data) => done({ ws, worker: JSON.parse(data).worker }));
    ws.once('unexpected-response', (req, res) => done({ error: res.statusCode }));
    ws.once('error', (err) => done({ error: err.code ?? err.message }));
    ws.once('close', (code) => done({ error: `close ${code}` }));
  });
}

describe('--balance reuseport', function () {
  this.timeout(60000);

  describe('4 workers', () => {
    let gw;
    before(async () => {
      gw = await startGateway(['--workers', '4', '--balance', 'reuseport', '--drain-timeout', '1000']);
    });
    after(() => gw.stop());

    it('spreads 2,000 connections from 16 addresses over every worker, none under 70% of its share', async () => {
      const sources = addresses(16);
      const held = [];
      for (let i = 0; i < 2000; i += 250) {
        held.push(...(await Promise.all(Array.from({ length: 250 }, (_, j) => dial(gw.url, sources[(i + j) % 16])))));
      }
      expect(held.filter((c) => c.error !== undefined)).to.deep.equal([]);
      const perWorker = [1, 2, 3, 4].map((w) => held.filter((c) => c.worker === w).length);
      expect(Math.min(...perWorker), `per worker: ${perWorker}`).to.be.at.least(0.7 * 500);
      // The primary accepted none of them: each worker counts what its own listener took.
      await eventually(async () => {
        const stats = await (await fetch(`http://127.0.0.1:${gw.metricsPort}/stats`)).json();
        return stats.workers.map((w) => w.received).reduce((a, b) => a + b, 0) >= 2000;
      }, { what: "the workers' own counts of what their listeners took, in /stats" });
      for (const c of held) c.ws.terminate();
    });

    it('keeps accepting through a SIGHUP rolling restart under a steady connect loop; no connect hangs', async () => {
      const before = gw.logs.filter((l) => l.msg === 'worker ready').length;
      await underConnectLoop(gw, () => {
        gw.signal('SIGHUP');
        return eventually(() => gw.logs.filter((l) => l.msg === 'worker ready').length >= before + 4, { what: '4 new workers ready', timeout: 30000 });
      });
    });

    it('keeps accepting while a worker is SIGKILLed under a connect loop; its replacement listens; no connect hangs', async () => {
      const pid = gw.workerPid(2);
      await underConnectLoop(gw, () => {
        process.kill(pid, 'SIGKILL');
        return eventually(() => gw.workerPid(2) !== pid, { what: 'worker 2 replaced', timeout: 30000 });
      });
      let i = 0;
      const replacement = async () => {
        const c = await dial(gw.url, addresses(16)[i++ % 16]);
        c.ws?.close();
        return c.worker === 2;
      };
      await eventually(replacement, { what: 'the new worker 2 accepting on its own listener' });
    });
  });

  describe('caps exact across workers (the primary counts)', () => {
    let gw;
    afterEach(() => gw.stop());

    it('--max-conns-per-ip 100: connections held on two workers, then a burst of 2,000 connects from one IP, WebSockets and streams: exactly 100 in all', async () => {
      gw = await startGateway(['--workers', '4', '--balance', 'reuseport', '--max-conns-per-ip', '100']);
      const stream = () =>
        new Promise((resolve) => {
          const req = http.get(`${gw.http}/sse?channels=news`, { agent: false }, (res) => resolve({ status: res.statusCode, req }));
          req.on('error', (err) => resolve({ error: err.code, req }));
        });
      // Places held on two workers first (the burst alone may land its first 100 on one worker, which asks first).
      const held = [];
      await eventually(async () => {
        held.push(await dial(gw.url, '127.0.0.1'));
        return new Set(held.map((t) => t.worker)).size >= 2;
      }, { what: 'connections held on two workers' });
      const tries = await Promise.all(Array.from({ length: 2000 }, (_, i) => (i % 4 === 0 ? stream() : dial(gw.url, '127.0.0.1', 20000))));
      const admitted = tries.filter((t) => t.status === 200 || t.worker !== undefined);
      expect(admitted.length, `admitted besides the ${held.length} held`).to.equal(100 - held.length);
      expect(tries.filter((t) => t.error === 429 || t.status === 429).length).to.equal(1900 + held.length);
      // Closing one frees one place, wherever it was.
      held[0].ws.close();
      const again = await eventually(async () => (await dial(gw.url, '127.0.0.1')).ws, { what: 'a place freed' });
      again.close();
      for (const t of [...held, ...tries]) (t.ws?.terminate(), t.req?.destroy());
    });

    it('--max-conns-per-user 3: connections of one user on every worker, exactly 3 admitted', async () => {
      gw = await startGateway(['--workers', '4', '--balance', 'reuseport', '--auth', 'jwt', '--jwt-secret', SECRET, '--max-conns-per-user', '3']);
      const token = await joseHs256({ sub: 'u1', subscribe: ['*'] });
      const answers = await Promise.all(
        addresses(16).map(async (address) => {
          const c = await dial(gw.url, address);
          c.ws.send(JSON.stringify({ type: 'auth', token, id: 1 }));
          const [data] = await once(c.ws, 'message');
          return { ...c, answer: JSON.parse(data) };
        })
      );
      expect(answers.filter((a) => a.answer.type === 'ack').length).to.equal(3);
      expect(answers.filter((a) => a.answer.code === 'forbidden').length).to.equal(13);
      expect(new Set(answers.map((a) => a.worker)).size).to.be.at.least(2);
      for (const a of answers) a.ws.terminate();
    });
  });

  describe('refused at start, with the reason', () => {
    it('where the platform cannot share a port (the check of lib/primary/reuseport.js)', async () => {
      const err = await reservePort({ host: '127.0.0.1', port: 0, platform: 'darwin' }).catch((e) => e);
      expect(err.message).to.equal('--balance reuseport needs Linux (SO_REUSEPORT spreading connections): this is darwin');
    });

    it('where the port is held by a listener that does not share it', async () => {
      const holder = net.createServer().listen(await freePort(), '127.0.0.1');
      await once(holder, 'listening');
      const { port } = holder.address();
      const run = spawnSync(process.execPath, [GATEWAY, '--balance', 'reuseport', '--host', '127.0.0.1', '--port', String(port), '--workers', '1', '--metrics-port', '0'], {
        encoding: 'utf8',
        timeout: 20000
      });
      holder.close();
      expect(run.status).to.equal(1);
      const fatal = run.stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l))
        .find((l) => l.msg === 'cannot start');
      expect(fatal.code).to.equal('listen');
      expect(fatal.err).to.include(`--port ${port}:`).and.include('EADDRINUSE');
    });
  });
});

/**
 * Dials in a loop (one every 10 ms, from 16 addresses, each closed at its
 * welcome) while `fault()` runs and until it resolves, then 500 ms more.
 * Every dial settles (none hangs), every dial after the fault is over
 * succeeds, and what failed meanwhile (a reset where
 * net.ipv4.tcp_migrate_req is 0, a close 1001 or a 503 from a draining
 * worker) stays a small share.
 */
async function underConnectLoop(gw, fault) {
  const results = [];
  let stop = false;
  const loop = (async () => {
    for (let i = 0; !stop; i++) {
      results.push(dial(gw.url, addresses(16)[i % 16]).then((r) => (r.ws?.close(), { ...r, at: Date.now() })));
      await sleep(10);
    }
  })();
  await sleep(300);
  await fault();
  const over = Date.now();
  await sleep(500);
  stop = true;
  await loop;
  const settled = await Promise.all(results);
  expect(settled.filter((r) => r.error === 'hung')).to.deep.equal([]);
  const after = settled.filter((r) => r.at > over + 100);
  expect(after.length).to.be.at.least(10);
  expect(after.filter((r) => r.error !== undefined)).to.deep.equal([]);
  const failed = settled.filter((r) => r.error !== undefined);
  expect(failed.length, JSON.stringify(failed.slice(0, 5))).to.be.below(settled.length / 4);
}
