// `node bin/loadgen.js` as a user runs it: bad flags, a target that refuses
// everything, and real runs against the gateway (2 workers) with subscribe and
// publish over WebSocket and over HTTP.
import { expect } from 'chai';
import { once } from 'node:events';
import net from 'node:net';
import { eventually, startGateway } from '../../../scripts/harness/gateway.js';
import { ephemeralPorts } from '../../../lib/loadgen/addresses.js';
import { joseHs256 } from '../../helpers/tokens.js';
import { RedisServer } from '../../../scripts/harness/redis.js';
import { spawnLoadgen } from '../../helpers/loadgen.js';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Runs loadgen against `target.url` with these flags and --json -. */
function loadgen(target, flags) {
  const args = ['--url', target.url, '--json', '-'];
  for (const [name, value] of Object.entries(flags)) args.push(`--${name}`, String(value));
  return spawnLoadgen(args);
}

/** A loopback port that nothing listens on (bound, then released). */
/**
 * Runs the loadgen against `own` and, mid-run (once every connection has
 * opened), SIGKILLs worker 1: its clients come back on the other worker and
 * recover there.
 */
async function killMidRun(own, flags) {
  const running = loadgen(own, flags);
  await eventually(async () => (await own.metric('gateway_connections_opened_total')) >= flags.connections, {
    timeout: 15000,
    what: `${flags.connections} connections opened`
  });
  process.kill(own.workerPid(1), 'SIGKILL');
  return running;
}

/**
 * The kill dropped some, and every drop (kill and rounds) came back with
 * nothing missed. A publish whose answer died with the killed worker may
 * still have gone out to its channel's `perChannel` subscribers: received
 * beyond the expected, never short of it.
 */
function expectEveryDropRecovered(r, atLeast, perChannel) {
  expect(r.dropped, 'connections the kill dropped').to.not.deep.equal({});
  expect(r.reconnects).to.be.at.least(atLeast);
  expect(r.recovered).to.equal(r.reconnects);
  expect(r.lost).to.equal(0);
  expect(r.extra, `${r.publishUnacked} publishes unanswered`).to.be.at.most(r.publishUnacked * perChannel);
}

async function closedPort() {
  const server = net.createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address();
  server.close();
  await once(server, 'close');
  return port;
}

// 400 subscribers on 4 channels, 100 publishes/s over HTTP for 2 s.
const HTTP_PUBLISH = { connections: 400, rate: 2000, channels: 4, 'publish-rate': 100, 'publish-via': 'http', 'api-key': 'k3y', duration: 2 };

describe('loadgen (command line)', function () {
  this.timeout(60000); // runs of several seconds each, against gateways it starts and kills
  for (const [args, message] of [
    [['--url', 'ws://exa mple'], /--url ws:\/\/exa mple is not a URL/],
    [['--url', 'ws://10.1.2.3:8080/ws'], /must point at this machine/],
    [['--url', 'http://127.0.0.1/ws'], /must be ws:\/\/ or wss:\/\//],
    [['--local-address', '127.0.0.9-127.0.0.1'], /range 127.0.0.9-127.0.0.1 is empty/],
    [['--connections', '0'], /--connections must be at least 1/],
    [['--publish-rate', '10'], /needs --channels/],
    [['--transport', 'sse'], /--transport sse needs --channels/],
    [['--token', 't', '--jwt-secret', 's'], /give --token or --jwt-secret, not both/],
    [['--channel-prefix', 'a b'], /--channel-prefix "a b" makes no valid channel name/],
    [['--transport', 'sse', '--channels', '2', '--publish-rate', '10'], /receives only: publish with --publish-via http/],
    [['--transport', 'sse', '--channels', '2', '--encoding', 'msgpack'], /--encoding and --delta are a WebSocket's/],
    [['--delta'], /--delta needs --channels/],
    [['--encoding', 'cbor'], /--encoding must be one of json, msgpack/],
    [['--no-such-flag'], /unknown option --no-such-flag/],
    [['--conections', '5'], /unknown option --conections: did you mean --connections\?/]
  ]) {
    it(`exits 2 with a message for ${args.join(' ')}`, async () => {
      const { code, stderr, stdout } = await spawnLoadgen(args);
      expect(code, stderr).to.equal(2);
      expect(stderr).to.match(message);
      expect(stdout).to.equal('');
    });
  }

  it('stops promptly against a closed port, reporting the refusals by reason', async () => {
    const port = await closedPort();
    const run = await loadgen({ url: `ws://127.0.0.1:${port}/ws` }, { connections: 5000, rate: 1000 });
    expect(run.code, run.stderr).to.equal(1);
    expect(run.ms).to.be.below(10000);
    expect(run.report.open).to.equal(0);
    expect(run.report.failed.ECONNREFUSED).to.be.at.least(50);
    // Dials still connecting when the run aborts are cut by the run itself, and reported as closed during handshake.
    expect(Object.keys(run.report.failed)).to.include('ECONNREFUSED');
    expect(Object.keys(run.report.failed).filter((reason) => reason !== 'closed during handshake')).to.deep.equal(['ECONNREFUSED']);
    expect(run.report.aborted).to.match(/refused/);
    expect(run.stderr).to.match(/FELL SHORT: aborted/);
  });

  describe('against the gateway (2 workers)', function () {
    let gw;
    before(async () => {
      gw = await startGateway(['--api-key', 'k3y']);
    });
    after(() => gw?.stop());

    it('binds explicit source ports, and takes a free one where the planned port is in use', async () => {
      const { low } = ephemeralPorts();
      // Connection g of 3 on 2 addresses binds 127.0.0.9 or .10, port low + floor(g / 2): .9:low is taken.
      const squatter = net.createServer().listen(low, '127.0.0.9');
      await once(squatter, 'listening');
      try {
        const run = await loadgen(gw, { connections: 3, rate: 100, 'local-address': '127.0.0.9-127.0.0.10', duration: 0 });
        expect(run.code, run.stderr).to.equal(0);
        expect(run.report).to.include({ open: 3, heldAtClose: 3 });
        expect(run.report.failed).to.deep.equal({});
      } finally {
        squatter.close();
      }
    });

    it('refuses more connections than the source addresses have ports, naming what would fit', async () => {
      const { low, high } = ephemeralPorts();
      const run = await loadgen(gw, { connections: 2 * (high - low + 1) + 1, 'local-address': '127.0.0.9-127.0.0.10' });
      expect(run.code).to.equal(2);
      expect(run.stderr).to.include(`hold at most ${2 * (high - low + 1)} connections`).and.include('give at least 3 addresses');
    });

    it('holds 3000 connections from 4 source addresses over 2 processes, publishing over WebSocket: nothing lost', async () => {
      const run = await loadgen(gw, {
        connections: 3000,
        rate: 3000,
        processes: 2,
        'local-address': '127.0.0.1-127.0.0.4',
        channels: 20,
        'publish-rate': 200,
        duration: 2
      });
      const r = run.report;
      expect(run.code, run.stderr).to.equal(0);
      expect(r).to.include({ target: 3000, open: 3000, heldAtClose: 3000, subscribed: 3000, lost: 0, outOfOrder: 0, processes: 2, localAddresses: 4 });
      expect(r.failed).to.deep.equal({});
      expect(r.published).to.be.at.least(300);
      expect(r.expected).to.equal(r.published * 150); // 3000 subscribers over 20 channels, round-robin publishes
      expect(r.received).to.equal(r.expected);
      for (const field of ['min', 'mean', 'stdev', 'p50', 'p90', 'p99', 'max']) expect(r.latencyMs).to.have.property(field);
      expect(r.latencyMs.p50).to.be.above(0);
      expect(r.handshakeMs.p99).to.be.at.least(r.handshakeMs.p50);
      expect(r.connectRate).to.be.above(0);
      expect(r.agentRssBytes).to.be.above(0);
      expect(r.rssPerConnectionBytes).to.be.above(0);
      expect(r.durationS).to.be.above(2);
    });

    it('speaks MessagePack (--encoding msgpack) and takes deltas (--delta), in either encoding: nothing lost', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'loadgen-delta-'));
      writeFileSync(join(dir, 'gateway.json'), JSON.stringify({ namespaces: [{ name: 'state', delta: true }] }));
      const own = await startGateway(['--config', join(dir, 'gateway.json')]);
      try {
        const flags = { connections: 200, rate: 2000, channels: 10, 'channel-prefix': 'state:', 'publish-rate': 100, 'message-size': 2000, duration: 2 };
        for (const extra of [{ encoding: 'msgpack' }, { delta: true }, { encoding: 'msgpack', delta: true }]) {
          const run = await loadgen(own, { ...flags, ...extra });
          expect(run.code, run.stderr).to.equal(0);
          expect(run.report).to.include({ open: 200, subscribed: 200, lost: 0, outOfOrder: 0 });
          expect(run.report.received).to.equal(run.report.expected).and.above(0);
        }
        expect(await own.metric('gateway_bytes_sent_total', '{encoding="msgpack"}')).to.be.above(0);
        expect(await own.metric('gateway_deltas_total', '{result="sent"}')).to.be.above(0);
      } finally {
        await own.stop();
      }
    });

    it('re-dials with --reconnect-every and after a worker kill, recovering every missed message', async () => {
      const own = await startGateway([]);
      try {
        const flags = { connections: 600, rate: 3000, 'local-address': '127.0.0.1-127.0.0.8', channels: 10, 'publish-rate': 200, duration: 4, 'reconnect-every': 1, 'reconnect-fraction': 0.2 };
        const run = await killMidRun(own, flags);
        expect(run.code, run.stderr).to.equal(0);
        expect(run.report).to.include({ open: 600, subscribed: 600, lost: 0, outOfOrder: 0, unrecoverable: 0 });
        expectEveryDropRecovered(run.report, 3 * 120, 60);
      } finally {
        await own.stop();
      }
    });

    it('re-dials with no close code left over: answers a second drain at once, and reports a later kill as 1006', async () => {
      const own = await startGateway(['--workers', '1', '--drain-timeout', '100']);
      try {
        const held = (n) => async () => (await own.metric('gateway_connections')) === n;
        const running = loadgen(own, { connections: 40, rate: 2000, channels: 2, 'publish-rate': 20, duration: 10, 'reconnect-every': 1000 });
        await eventually(held(40), { timeout: 15000, what: '40 connections held' });
        for (let round = 1; round <= 2; round++) {
          const drained = own.workerPid(1);
          own.signal('SIGHUP');
          await eventually(() => own.workerPid(1) !== drained && own.logs.filter((l) => l.msg === 'rolling restart done').length === round, {
            timeout: 15000,
            what: `rolling restart ${round}`
          });
          await eventually(held(40), { timeout: 15000, what: `40 connections back after drain ${round}` });
        }
        process.kill(own.workerPid(1), 'SIGKILL');
        const run = await running;
        const r = run.report;
        expect(run.code, run.stderr).to.equal(0);
        // Each drain's close was echoed at once (a connection left waiting
        // for the grace would miss messages), and the kill is no close at all.
        expect(r.dropped).to.deep.equal({ 1001: 80, 1006: 40 });
        expect(r).to.include({ open: 40, reconnects: 120, recovered: 120, unrecoverable: 0, lost: 0, outOfOrder: 0 });
      } finally {
        await own.stop();
      }
    });

    it('publishes over HTTP with autocannon: every 202 reaches every subscriber', async () => {
      const run = await loadgen(gw, HTTP_PUBLISH);
      const r = run.report;
      expect(run.code, run.stderr).to.equal(0);
      expect(r).to.include({ open: 400, lost: 0, outOfOrder: 0, publishUnacked: 0 });
      expect(r.published).to.equal(200);
      expect(r.expected).to.equal(200 * 100);
      expect(r.received).to.equal(r.expected);
    });

    it('holds SSE streams (--transport sse) with the same checks: every 202 reaches every stream, in order', async () => {
      // On channels of their own (feed.0 …), as the soak runs them beside the WebSocket holders.
      const run = await loadgen(gw, { ...HTTP_PUBLISH, transport: 'sse', 'channel-prefix': 'feed.' });
      const r = run.report;
      expect(run.code, run.stderr).to.equal(0);
      expect(r).to.include({ transport: 'sse', open: 400, subscribed: 400, lost: 0, outOfOrder: 0, seqGaps: 0, publishUnacked: 0 });
      expect(r.expected).to.equal(r.published * 100);
      expect(r.received).to.equal(r.expected);
    });

    it('re-dials SSE streams with Last-Event-ID (--reconnect-every, a worker kill), recovering every missed message', async () => {
      const own = await startGateway(['--api-key', 'k3y']);
      try {
        const run = await killMidRun(own, { ...HTTP_PUBLISH, transport: 'sse', duration: 4, 'reconnect-every': 1, 'reconnect-fraction': 0.2 });
        expect(run.code, run.stderr).to.equal(0);
        expect(run.report).to.include({ transport: 'sse', open: 400, subscribed: 400, lost: 0, outOfOrder: 0, seqGaps: 0, unrecoverable: 0 });
        expectEveryDropRecovered(run.report, 3 * 80, 100);
      } finally {
        await own.stop();
      }
    });

    it('authenticates under --auth jwt: a token per connection (--jwt-secret) for WebSockets, re-dials included, and for SSE', async () => {
      const secret = 'loadgen-test-secret-0123456789abcdef';
      const own = await startGateway(['--auth', 'jwt', '--jwt-secret', secret, '--api-key', 'k3y']);
      try {
        const ws = await loadgen(own, { connections: 200, rate: 2000, channels: 4, 'publish-rate': 100, duration: 2, 'reconnect-every': 1, 'jwt-secret': secret });
        expect(ws.code, ws.stderr).to.equal(0);
        expect(ws.report).to.include({ open: 200, subscribed: 200, lost: 0, outOfOrder: 0, unrecoverable: 0 });
        expect(ws.report.published).to.be.above(0);
        expect(ws.report.recovered).to.equal(ws.report.reconnects).and.above(0);
        const sse = await loadgen(own, { ...HTTP_PUBLISH, connections: 200, transport: 'sse', 'jwt-secret': secret });
        expect(sse.code, sse.stderr).to.equal(0);
        expect(sse.report).to.include({ open: 200, subscribed: 200, lost: 0 });
        expect(sse.report.received).to.equal(sse.report.expected).and.above(0);
        const shared = await joseHs256({ sub: 'everyone', subscribe: ['c*'] }, secret);
        expect((await loadgen(own, { connections: 10, channels: 2, duration: 0, token: shared })).report).to.include({ subscribed: 10 });
        // The gateway's verifier refuses tokens signed with another secret: the auth frame, and the stream's URL.
        const forged = { connections: 10, channels: 2, duration: 0, 'jwt-secret': 'not-the-gateways-secret-0123456789' };
        expect((await loadgen(own, forged)).report.subscribeErrors).to.deep.equal({ 'auth unauthorized': 10 });
        expect((await loadgen(own, { ...forged, transport: 'sse' })).report.failed).to.deep.equal({ 'HTTP 401': 10 });
      } finally {
        await own.stop();
      }
    });

    it('across a Redis restart (every channel a new epoch): seq starting over is no disorder, recoveries answer epoch changed', async () => {
      const redis = await RedisServer.start();
      const own = await startGateway(['--engine', 'redis', '--redis-url', redis.url, '--api-key', 'k3y']);
      try {
        const storms = { duration: 5, 'reconnect-every': 1, 'reconnect-fraction': 0.2 };
        const running = [
          loadgen(own, { connections: 200, rate: 2000, channels: 4, 'publish-rate': 100, 'local-address': '127.0.0.1-127.0.0.4', ...storms }),
          loadgen(own, { ...HTTP_PUBLISH, connections: 100, transport: 'sse', 'local-address': '127.0.0.5-127.0.0.6', ...storms })
        ];
        // Mid-hold (both publishing, a reconnect round or more done), Redis restarts empty.
        await eventually(async () => (await own.metric('gateway_messages_published_total')) >= 150, { what: 'publishes', timeout: 20000 });
        await redis.stop();
        await redis.start();
        const [ws, sse] = await Promise.all(running);
        // A WebSocket's messages carry no epoch: its first recovery after the restart asks in the old one.
        expect(ws.report.epochChanged).to.be.above(0);
        for (const { report: r, stderr } of [ws, sse]) {
          expect(r, stderr).to.include({ outOfOrder: 0, seqGaps: 0 });
          expect(r.seqRestarts, `${r.transport}: held subscribers saw seq start over`).to.be.above(0);
          expect(r.unrecoverable, 'every refused recovery was an epoch change').to.equal(r.epochChanged);
        }
      } finally {
        await own.stop();
        await redis.remove();
      }
    });

    it('counts publishes with a wrong API key as refused by HTTP status, with nothing expected', async () => {
      const run = await loadgen(gw, {
        connections: 20,
        channels: 2,
        'publish-rate': 20,
        'publish-via': 'http',
        'api-key': 'wrong',
        duration: 1
      });
      expect(run.report).to.include({ published: 0, expected: 0, received: 0, lost: 0 });
      expect(Object.keys(run.report.publishErrors)).to.satisfy((keys) => keys.length === 1 && /^HTTP 40[13]$/.test(keys[0]));
    });
  });
});
