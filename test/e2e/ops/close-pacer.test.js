// A burst of client closes is answered over several turns of the event loop
// (lib/transport/close-pacer.js), and every close still completes normally.
import { once } from 'node:events';
import http from 'node:http';
import WebSocket, { WebSocketServer } from 'ws';
import { expect } from 'chai';
import { ClosePacer } from '../../../lib/transport/close-pacer.js';
import { startGateway, eventually } from '../../../scripts/harness/gateway.js';
import { TestClient } from '../../helpers/client.js';
import { sleep } from '../../helpers/wait.js';

const BURST = 60;
const STORM = 1500; // past the FINs a turn takes when they come together

describe('close pacer', function () {
  let server;
  afterEach(() => server?.close());

  it('answers one close and closes one answered socket per loop turn at the smallest budget, each close with its own code, no FIN read', async () => {
    const pacer = new ClosePacer({ budgetMs: 0, endsPerTurn: 1 });
    const seen = [];
    const sockets = []; // per server socket: the turn it stopped reading in once answered, the turn it closed in, whether it read the FIN
    server = await pacedServer(pacer, (ws, socket) => {
      ws.on('close', (code) => seen.push({ code, turn: pacer.turns }));
      sockets.push(watchSocket(socket, pacer));
    });
    const clients = await openClients(server);
    const echoed = clients.map((ws) => once(ws, 'close').then(([code]) => code));
    clients.forEach((ws, i) => ws.close(4000 + i));
    const codes = await Promise.all(echoed);
    expect(codes).to.deep.equal(clients.map((_, i) => 4000 + i)); // the server echoed each client's own code
    await eventually(() => seen.length === BURST, { what: 'server side closed' });
    expect(seen.map((s) => s.code).sort()).to.deep.equal(codes);
    // Once answered, each socket stopped reading (the client's FIN left in
    // the kernel, never read) and was closed in a turn of its own, however
    // many arrived together.
    expect(sockets.every((t) => t.stoppedIn !== undefined && t.closedIn > t.stoppedIn && !t.ended)).to.equal(true);
    expect(new Set(sockets.map((t) => t.closedIn)).size).to.equal(BURST);
    expect(pacer.turns).to.be.at.least(BURST);
  });
});

describe('close pacer, reads', function () {
  let server;
  afterEach(() => server?.close());

  it('past the reads a turn takes, a socket waits for a later turn, its bytes in order, and every close is still echoed', async () => {
    const pacer = new ClosePacer({ readsPerTurn: 1 }); // one chunk a turn goes straight to ws; the rest wait
    server = await pacedServer(pacer, (ws) => ws.on('message', (data) => ws.send(data)));
    const clients = await openClients(server);
    const echoes = clients.map((ws) => {
      const got = [];
      ws.on('message', (data) => got.push(String(data)));
      return got;
    });
    const closed = clients.map((ws) => once(ws, 'close').then(([code]) => code));
    // Each client's messages in separate writes, then its close: many sockets with bytes in the same turns.
    for (let n = 0; n < 5; n++) {
      clients.forEach((ws, i) => ws.send(`${i}:${n}`));
      await sleep(1); // a chunk of its own, while earlier ones may still wait
    }
    clients.forEach((ws, i) => ws.close(4000 + i));
    expect(await Promise.all(closed)).to.deep.equal(clients.map((_, i) => 4000 + i));
    expect(echoes).to.deep.equal(clients.map((_, i) => [0, 1, 2, 3, 4].map((n) => `${i}:${n}`)));
    expect(pacer.readsWaited).to.be.above(BURST);
  });
});

describe('close pacer, clients gone without a close frame', function () {
  let server;
  afterEach(() => server?.close());

  it("past the FINs a turn hands to ws, a client's FIN waits for a later turn, and every connection still closes", async () => {
    const pacer = new ClosePacer({ finsPerTurn: 1 }); // one end a turn goes straight to ws; the rest wait
    const closes = [];
    server = await pacedServer(pacer, (ws, socket) => {
      ws.on('close', (code) => closes.push({ code, turn: pacer.turns }));
      expect(socket.allowHalfOpen).to.equal(true); // so Node does not end it before ws's end handler runs
    });
    const clients = await openClients(server);
    clients.forEach((ws) => ws.terminate()); // FIN without a close frame, all in one turn
    await eventually(() => closes.length === BURST, { what: 'every server-side close' });
    expect(closes.every((c) => c.code === 1006)).to.equal(true);
    expect(pacer.eofsWaited).to.be.above(BURST / 2);
    expect(new Set(closes.map((c) => c.turn)).size).to.be.above(BURST / 2);
  });
});

describe('close pacer, a storm of FINs or close frames', function () {
  let server;
  afterEach(() => server?.close());

  /** An echo server whose closes `pacer` paces; `closes` gets each server-side close code. */
  async function echoServer(pacer, closes) {
    return pacedServer(pacer, (ws) => {
      ws.on('close', (code) => closes.push(code));
      ws.on('message', (data) => ws.send(data));
    });
  }

  /** Every staying socket reads again: each echoes a message sent after the storm; then all are closed and forgotten. */
  async function stayingRead(pacer, staying) {
    const echoes = staying.map((ws, i) => once(ws, 'message').then(([data]) => String(data) === `after ${i}`));
    staying.forEach((ws, i) => ws.send(`after ${i}`));
    expect(await Promise.all(echoes)).to.deep.equal(staying.map(() => true));
    expect(pacer.paused.size).to.equal(0);
    staying.forEach((ws) => ws.terminate());
    await eventually(() => pacer.sockets.size === 0, { what: 'every socket forgotten once closed' });
  }

  it('past the FINs a turn takes, every other socket stops reading and reads again over the next turns, losing nothing', async () => {
    const pacer = new ClosePacer({ pauseAfter: 5, resumesPerTurn: 3 }); // a pause after 5 FINs in a turn; 3 sockets a turn read again
    const closes = [];
    server = await echoServer(pacer, closes);
    const leaving = await openClients(server);
    const staying = await openClients(server);
    leaving.forEach((ws) => ws.terminate());
    await eventually(() => closes.length === BURST, { what: 'every leaving client closed on the server' });
    expect(closes.every((code) => code === 1006)).to.equal(true);
    expect(pacer.pauses).to.be.at.least(1);
    await stayingRead(pacer, staying);
  });

  it('past the close frames a turn reads, every other socket stops reading likewise, and every close completes with its code', async () => {
    const pacer = new ClosePacer({ pauseAfter: 5, resumesPerTurn: 3 });
    const closes = [];
    server = await echoServer(pacer, closes);
    const leaving = await openClients(server);
    const staying = await openClients(server);
    // Ordinary messages, as many at once, pause nothing.
    const echoed = staying.map((ws) => once(ws, 'message'));
    staying.forEach((ws, i) => ws.send(`before ${i}`));
    await Promise.all(echoed);
    expect(pacer.pauses, 'no pause for ordinary reads').to.equal(0);
    const answered = leaving.map((ws) => once(ws, 'close').then(([code]) => code));
    leaving.forEach((ws) => ws.close(4321));
    expect(await Promise.all(answered)).to.deep.equal(leaving.map(() => 4321));
    await eventually(() => closes.length === BURST, { what: 'every leaving client closed on the server' });
    expect(closes.every((code) => code === 4321)).to.equal(true);
    expect(pacer.pauses, 'a pause for the burst of close frames').to.be.at.least(1);
    await stayingRead(pacer, staying);
  });
});

describe('mass disconnect through the gateway', function () {
  let gw;
  afterEach(() => gw?.stop());

  it('closes every client with its code and leaves no connection or subscription behind', async () => {
    gw = await startGateway(['--workers', '1']);
    const clients = await Promise.all(Array.from({ length: BURST }, () => TestClient.connect(gw.url)));
    await Promise.all(clients.map((c, i) => c.request({ type: 'subscribe', channel: `c${i % 5}` })));
    clients.forEach((c) => c.ws.close(1000));
    const codes = await Promise.all(clients.map((c) => c.closed.then(({ code }) => code)));
    expect(codes).to.deep.equal(clients.map(() => 1000));
    await eventually(async () => (await gw.metric('gateway_connections')) === 0 && (await gw.metric('gateway_subscriptions')) === 0, {
      what: 'no connection or subscription left'
    });
    expect(await gw.metric('gateway_connections_closed_total', '{transport="ws",reason="normal"}')).to.equal(BURST);
  });

  it('closes every client gone without a close frame and leaves no connection or subscription behind, while the others go on', async () => {
    gw = await startGateway(['--workers', '1']);
    const clients = await Promise.all(Array.from({ length: STORM }, () => TestClient.connect(gw.url)));
    const staying = await TestClient.connect(gw.url);
    await staying.subscribe('after');
    await Promise.all(clients.map((c, i) => c.request({ type: 'subscribe', channel: `c${i % 5}` })));
    clients.forEach((c) => c.ws.terminate());
    await eventually(async () => (await gw.metric('gateway_connections')) === 1 && (await gw.metric('gateway_subscriptions')) === 1, {
      what: 'no connection or subscription left but the staying client'
    });
    expect(await gw.metric('gateway_connections_closed_total', '{transport="ws",reason="abnormal"}')).to.equal(STORM);
    await staying.publish('after', 'still here');
    expect((await staying.next((f) => f.type === 'message')).data).to.equal('still here');
    staying.close();
  });
});

/** A ws server on a free port whose connections `pacer` watches; `setUp(ws, socket)` for each. */
async function pacedServer(pacer, setUp) {
  const wss = new WebSocketServer({ noServer: true });
  const server = http.createServer();
  server.on('upgrade', (req, socket, head) =>
    wss.handleUpgrade(req, socket, head, (ws) => {
      pacer.watch(ws);
      setUp(ws, socket);
    })
  );
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return server;
}

/** BURST clients of `server`, open. */
function openClients(server) {
  const url = `ws://127.0.0.1:${server.address().port}`;
  return Promise.all(
    Array.from({ length: BURST }, async () => {
      const ws = new WebSocket(url);
      await once(ws, 'open');
      return ws;
    })
  );
}

/** Records the pacer turn a socket stops reading in, the turn it closes in, and whether it read the peer's FIN. */
function watchSocket(socket, pacer) {
  const turns = { stoppedIn: undefined, closedIn: undefined, ended: false };
  const handle = socket._handle;
  const { readStop } = handle;
  handle.readStop = function () {
    turns.stoppedIn = pacer.turns;
    return readStop.call(this);
  };
  socket.on('end', () => (turns.ended = true));
  socket.on('close', () => (turns.closedIn = pacer.turns));
  return turns;
}
