// The primary's hand-over line (lib/primary/master.js): a burst of TCP
// handles to one worker goes to Node one at a time, each once the previous one
// is acknowledged, in order, and none is lost.
import { fork } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { HandOverLine } from '../lib/primary/master.js';
import { sleep } from './helpers/wait.js';

const CHILD = fileURLToPath(new URL('./fixtures/handle-echo.js', import.meta.url));
const BURST = 40;

describe('hand-over line', function () {
  let child;
  let server;
  afterEach(() => {
    child?.kill();
    server?.close();
  });

  it('gives Node one handle per acknowledgement and delivers a burst in order', async () => {
    child = fork(CHILD);
    await once(child, 'message');
    let sends = 0;
    const worker = { process: child, send: (...args) => (sends++, child.send(...args)) };
    const line = new HandOverLine(worker);

    const accepted = [];
    server = await rawServer((handle) => accepted.push(handle));
    const clients = Array.from({ length: BURST }, () => net.connect(server.address().port, '127.0.0.1'));
    const ports = await Promise.all(clients.map(async (client) => (await once(client, 'connect'), client.localPort)));
    const answers = clients.map(async (client) => {
      let text = '';
      for await (const chunk of client) text += chunk;
      return text.trim();
    });
    while (accepted.length < BURST) await sleep(10);

    const byPort = new Map(accepted.map((handle, id) => [peerPort(handle), String(id)]));
    accepted.forEach((handle, id) => line.push(handle, { id }));
    expect(sends).to.equal(1); // the rest wait in the line, not in Node's queue
    const ids = await Promise.all(answers);
    expect(sends).to.equal(BURST);
    // Each client got the id of the socket the server accepted for it: none lost, none swapped.
    expect(ids).to.deep.equal(ports.map((port) => byPort.get(port)));
  });

  it('closes the handles still waiting when it is closed (its worker died)', async () => {
    child = fork(CHILD);
    await once(child, 'message');
    const line = new HandOverLine({ process: child, send: (...args) => child.send(...args) });
    const accepted = [];
    server = await rawServer((handle) => accepted.push(handle));
    const clients = [0, 1].map(() => net.connect(server.address().port, '127.0.0.1'));
    while (accepted.length < 2) await sleep(10);
    line.push(accepted[0], { id: 0 });
    line.push(accepted[1], { id: 1 }); // waits: the line is busy with the first
    line.close();
    // The closed handle's client sees its connection end, with no answer.
    let text = '';
    for await (const chunk of clients[1]) text += chunk;
    expect(text).to.equal('');
    clients[0].destroy();
  });
});

/** A listener that gives each accepted connection to `accepted` as a bare TCP handle, as the primary takes them. */
async function rawServer(accepted) {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  server._handle.onconnection = (err, handle) => accepted(handle);
  return server;
}

function peerPort(handle) {
  const peer = {};
  handle.getpeername(peer);
  return peer.port;
}
