// A reconnect storm against the connect hook: 2,000 WebSockets opened at
// once reach a backend that takes 200 ms per answer at most
// --hook-concurrency requests at a time per worker, each exactly once, and
// all are admitted in the time that rate implies. Then the backend goes down
// and comes back: the browser client (lib/client) is closed with 1013, backs
// off with jitter rather than in step, and every client is in once the
// backend answers again.
import { expect } from 'chai';
import WebSocket from 'ws';
import { connect, State } from '../../../lib/client/index.js';
import { startGateway, eventually } from '../../../scripts/harness/gateway.js';
import { TestClient } from '../../helpers/client.js';
import { Backend, json } from '../../helpers/backend.js';
import { sleep } from '../../helpers/wait.js';

const CONNECTIONS = 2000;
const CONCURRENCY = 16;
const WORKERS = 2;
const ANSWER_MS = 200;

describe('hooks: a reconnect storm', function () {
  this.timeout(120000);
  let gw;
  let backend;
  const clients = [];

  afterEach(async () => {
    for (const client of clients.splice(0)) client.close();
    await gw?.stop();
    await backend?.stop();
  });

  it(`admits ${CONNECTIONS} connections opened at once, at most ${CONCURRENCY} hook requests in flight per worker, each asked once`, async () => {
    let n = 0;
    backend = await Backend.start((route, body, req, res) => setTimeout(() => json(res, { result: { user: `u${n++}` } }), ANSWER_MS));
    gw = await startGateway([
      '--auth', 'hook', '--connect-hook', `${backend.url}/connect`,
      '--hook-concurrency', String(CONCURRENCY), '--workers', String(WORKERS), '--balance', 'even',
      '--hook-timeout', '5000' // the pacing is under test, not the timeout: room for a loaded machine's event-loop lag
    ]);
    const started = Date.now();
    for (let i = 0; i < CONNECTIONS; i++) clients.push(new TestClient(new WebSocket(gw.url)));
    const welcomes = await Promise.all(clients.map((c) => c.next((f) => f.type === 'welcome', 90000)));
    const elapsed = Date.now() - started;

    expect(welcomes).to.have.length(CONNECTIONS);
    expect(backend.requests).to.have.length(CONNECTIONS); // one per connection, none retried by the gateway
    expect(new Set(backend.requests.map((r) => r.body.client)).size).to.equal(CONNECTIONS);
    expect(backend.maxInFlight).to.be.at.most(CONCURRENCY * WORKERS);
    expect(backend.sockets.size).to.be.at.most(CONCURRENCY * WORKERS); // pooled, kept alive
    // Each worker's share took its turns of CONCURRENCY requests, ANSWER_MS each.
    const perWorker = welcomes.filter((w) => w.worker === 1).length;
    const slowest = Math.max(perWorker, CONNECTIONS - perWorker);
    const implied = Math.ceil(slowest / CONCURRENCY) * ANSWER_MS;
    expect(elapsed).to.be.within(implied * 0.95, implied * 2 + 5000); // the lower bound is the point; the upper one leaves room for a loaded machine
    expect(await gw.metric('gateway_hook_requests_total', '{hook="connect",result="ok"}')).to.equal(CONNECTIONS);
  });

  it('refuses at once past --hook-queue (1013, counted queue_full), sends nothing for a client that left the queue, shows the queue and the durations', async () => {
    const held = [];
    backend = await Backend.start((route, body, req, res) => held.push(res));
    gw = await startGateway([
      '--auth', 'hook', '--connect-hook', `${backend.url}/connect`,
      '--hook-concurrency', '1', '--hook-queue', '1', '--hook-timeout', '5000', '--workers', '1'
    ]);
    const [first, second] = [new TestClient(new WebSocket(gw.url)), new TestClient(new WebSocket(gw.url))];
    clients.push(first, second);
    await eventually(() => backend.requests.length === 1, { what: 'the first request in flight' });
    await eventually(async () => (await gw.metric('gateway_hook_queue')) === 1, { what: 'the second one queued' });
    const started = Date.now();
    const third = new TestClient(new WebSocket(gw.url));
    clients.push(third);
    expect((await third.closed).code).to.equal(1013);
    expect(Date.now() - started).to.be.below(1000); // refused at once, not after the timeout
    expect(await gw.metric('gateway_hook_requests_total', '{hook="connect",result="queue_full"}')).to.equal(1);

    // The queued client leaves: when its turn comes, nothing is sent for it.
    second.ws.terminate();
    await second.closed;
    held.shift().end('{"result":{"user":"a"}}');
    await first.next((f) => f.type === 'welcome');
    await eventually(async () => (await gw.metric('gateway_hook_requests_total', '{hook="connect",result="gone"}')) === 1, { what: 'the gone one counted' });
    expect(backend.requests).to.have.length(1);
    expect(await gw.metric('gateway_hook_duration_seconds_count', '{hook="connect"}')).to.equal(1);
    expect(await gw.metric('gateway_hook_queue')).to.equal(0);
  });

  it('closes with 1013 while the backend is down; the clients back off with jitter and all get in once it is back', async () => {
    const CLIENTS = 200;
    let up = false;
    backend = await Backend.start((route, body, req, res) => (up ? json(res, { result: { user: 'u' } }) : json(res, {}, 503)));
    gw = await startGateway(['--auth', 'hook', '--connect-hook', `${backend.url}/connect`, '--workers', String(WORKERS), '--balance', 'even']);
    await backend.stop(); // down: nothing listens
    const closes = [];
    const delays = []; // each client's first backoff after the 1013
    for (let i = 0; i < CLIENTS; i++) {
      const client = connect(gw.url, { WebSocket, transport: 'websocket', backoffBase: 50, backoffCap: 3000 });
      client.on('state', (state, info) => {
        if (state !== State.RECONNECTING) return;
        if (closes.length < CLIENTS) delays.push(info.delay);
        closes.push(info.code);
      });
      clients.push(client);
    }
    await eventually(() => closes.length >= CLIENTS, { what: 'every client closed once', timeout: 20000 });
    expect(new Set(closes)).to.deep.equal(new Set([1013]));

    await backend.restart(); // answers 503 for now: the attempts are counted
    const from = Date.now();
    await sleep(3000);
    const attempts = backend.requests.filter((r) => r.at >= from);
    // Backoff: a few attempts per client in 3 s (windows of 400, 800, 1600 ms…), not one per round trip.
    expect(attempts.length).to.be.within(CLIENTS / 2, CLIENTS * 6);
    // Jitter: the delays the clients drew are spread over their window, not one wall of CLIENTS at the same instant.
    // (Read from the clients: when the attempts reach the backend also depends on how busy the machine is.)
    const perBucket = new Map();
    for (const delay of delays) perBucket.set(Math.floor(delay / 100), (perBucket.get(Math.floor(delay / 100)) ?? 0) + 1);
    expect(Math.max(...perBucket.values()), 'first delays within one 100 ms').to.be.below(CLIENTS / 2);
    expect(Math.max(...delays) - Math.min(...delays), 'the first delays span').to.be.above(200);

    up = true;
    await eventually(() => clients.every((c) => c.state === State.OPEN), { what: 'every client open', timeout: 30000 });
  });
});
