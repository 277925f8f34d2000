// The last catch of every HTTP route (lib/transport/http-io.js cutOnDefect):
// what reaches it is a defect, since each route answers its refusals before.
// It is logged with its stack and costs its own request alone. A real server
// on an ephemeral port whose handler's chain fails as a route's would.
import { expect } from 'chai';
import http from 'node:http';
import { once } from 'node:events';
import { Writable } from 'node:stream';
import pino from 'pino';
import { cutOnDefect, reply } from '../../../lib/transport/http-io.js';

describe('a defect while answering a request', function () {
  let server;
  afterEach(() => server?.close());

  it('is logged with its stack and the path, cuts that connection only, and the next request is answered', async function () {
    const lines = [];
    const sink = new Writable({
      write(chunk, encoding, done) {
        lines.push(JSON.parse(chunk));
        done();
      }
    });
    const log = pino({}, sink);
    server = http.createServer((req, res) => {
      const work = req.url.startsWith('/defect') ? Promise.reject(new TypeError('a defect')) : Promise.resolve({ ok: true });
      work.then((body) => reply(res, 200, body)).catch(cutOnDefect(res, log));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const url = `http://127.0.0.1:${server.address().port}`;

    const failed = await fetch(`${url}/defect?key=not-logged`).then(
      (res) => `answered ${res.status}`,
      (err) => err
    );
    expect(failed, 'no answer: the connection was cut').to.be.instanceOf(Error);
    expect(lines).to.have.length(1);
    expect(lines[0]).to.include({ level: 50, method: 'GET', path: '/defect' });
    expect(lines[0].err.stack).to.include('TypeError: a defect');
    expect(JSON.stringify(lines[0])).to.not.include('not-logged');

    const next = await fetch(`${url}/fine`);
    expect(next.status).to.equal(200);
    expect(await next.json()).to.deep.equal({ ok: true });
  });
});
