// The backend HTTP client (lib/backend/http.js) and the limiter in front of
// it (lib/backend/limiter.js), against a node:http server in this process:
// what each outcome looks like to a caller (the hooks, the webhooks).
import http from 'node:http';
import { once } from 'node:events';
import { expect } from 'chai';
import { BackendClient, BackendError } from '../../../lib/backend/http.js';
import { InternalCode } from '../../../lib/core/errors.js';
import { Limiter, QUEUE_FULL } from '../../../lib/backend/limiter.js';
import { freePort } from '../../../scripts/harness/gateway.js';

describe('backend client', () => {
  let server;
  let base;
  let client;
  let handle;
  const seen = [];

  before(async () => {
    server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        seen.push({ url: req.url, body, headers: req.headers, port: req.socket.remotePort });
        handle(req, res);
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    base = `http://127.0.0.1:${server.address().port}`;
    client = new BackendClient({ timeoutMs: 200, connections: 2, maxBytes: 1024 });
  });
  after(async () => {
    await client.close();
    server.closeAllConnections();
    server.close();
  });

  it('posts the body as given with its headers, answers any status with its text, over at most `connections` kept-alive sockets', async () => {
    handle = (req, res) => res.writeHead(req.url === '/500' ? 500 : 200).end('{"result":{}}');
    const ok = await client.post(new URL(`${base}/ok?x=1`), '{"a":1}', { 'x-gateway-signature': 'sha256=ab' });
    expect(ok).to.deep.equal({ status: 200, text: '{"result":{}}' });
    expect(seen.at(-1)).to.deep.include({ url: '/ok?x=1', body: '{"a":1}' });
    expect(seen.at(-1).headers).to.include({ 'content-type': 'application/json', 'x-gateway-signature': 'sha256=ab' });
    expect(await client.post(new URL(`${base}/500`), '{}')).to.deep.equal({ status: 500, text: '{"result":{}}' });
    // Five at once over at most `connections` sockets, kept for the next ones.
    const before = seen.length;
    handle = (req, res) => setTimeout(() => res.end('{}'), 20);
    const five = () => Promise.all(Array.from({ length: 5 }, () => client.post(new URL(`${base}/slow`), '{}')));
    expect((await five()).every((o) => o.status === 200)).to.equal(true);
    expect((await five()).every((o) => o.status === 200)).to.equal(true);
    expect(new Set(seen.slice(before).map((s) => s.port)).size).to.be.at.most(2);
  });

  it('tells apart a redirect, a body over the cap (declared or streamed), a timeout and an unreachable backend', async () => {
    const failure = async (path) => {
      const outcome = await client.post(new URL(`${base}${path}`), '{}');
      expect(outcome).to.be.instanceOf(BackendError);
      return outcome.code;
    };
    handle = (req, res) => {
      if (req.url === '/redirect') return res.writeHead(307, { location: '/elsewhere' }).end();
      if (req.url === '/declared') return res.writeHead(200, { 'content-length': 4096 }).end('x'.repeat(4096));
      if (req.url === '/streamed') {
        res.write('x'.repeat(800));
        return setTimeout(() => res.end('x'.repeat(800)), 10);
      }
      if (req.url === '/late') return setTimeout(() => res.writeHead(200).end('{}'), 400);
      return undefined;
    };
    expect(await failure('/redirect')).to.equal(InternalCode.REDIRECT);
    expect(await failure('/declared')).to.equal(InternalCode.TOO_LARGE);
    expect(await failure('/streamed')).to.equal(InternalCode.TOO_LARGE);
    const started = Date.now();
    expect(await failure('/late')).to.equal(InternalCode.TIMEOUT);
    expect(Date.now() - started).to.be.within(190, 350);
    const closed = await freePort();
    const outcome = await client.post(new URL(`http://127.0.0.1:${closed}/`), '{}');
    expect(outcome.code).to.equal(InternalCode.UNREACHABLE);
  });
});

describe('limiter', () => {
  it('runs at most `concurrency` tasks, the next ones in FIFO order, and refuses past the queue', async () => {
    const limiter = new Limiter(2, 2);
    const releases = [];
    const started = [];
    const task = (n) => () => {
      started.push(n);
      return new Promise((resolve) => releases.push(() => resolve(n)));
    };
    const results = [1, 2, 3, 4].map((n) => limiter.run(task(n)));
    expect(await limiter.run(task(5))).to.equal(QUEUE_FULL);
    expect(started).to.deep.equal([1, 2]);
    expect(limiter.waiting).to.equal(2);
    releases[1]();
    await results[1];
    expect(started).to.deep.equal([1, 2, 3]);
    releases[0]();
    releases[2]();
    await Promise.resolve();
    await results[2];
    expect(started).to.deep.equal([1, 2, 3, 4]);
    releases[3]();
    expect(await Promise.all(results)).to.deep.equal([1, 2, 3, 4]);
    expect(limiter.running).to.equal(0);
    expect(limiter.waiting).to.equal(0);
  });
});
