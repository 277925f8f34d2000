// The primary's hand-over line (lib/primary/master.js): a burst of sockets to
// one worker goes to Node one at a time, each once the previous one is
// acknowledged, in order, and none is lost.
import { fork } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { HandOverLine } from '../lib/primary/master.js';

const CHILD = fileURLToPath(new URL('./fixtures/handle-echo.js', import.meta.url));
const BURST = 40;

describe('hand-over line', function () {
  let child;
  let server;
  afterEach(() => {
    child?.kill();
    server?.close();
  });

  it('gives Node one socket per acknowledgement and delivers a burst in order', async () => {
    child = fork(CHILD);
    await once(child, 'message');
    let sends = 0;
    const worker = { process: child, send: (...args) => (sends++, child.send(...args)) };
    const line = new HandOverLine(worker);

    const accepted = [];
    server = net.createServer({ pauseOnConnect: true }, (socket) => accepted.push(socket));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const clients = Array.from({ length: BURST }, () => net.connect(server.address().port, '127.0.0.1'));
    const ports = await Promise.all(clients.map(async (client) => (await once(client, 'connect'), client.localPort)));
    const answers = clients.map(async (client) => {
      let text = '';
      for await (const chunk of client) text += chunk;
      return text.trim();
    });
    while (accepted.length < BURST) await new Promise((r) => setTimeout(r, 10));

    const byPort = new Map(accepted.map((socket, id) => [socket.remotePort, String(id)])); // before the handles leave
    accepted.forEach((socket, id) => line.push(socket, { id }));
    expect(sends).to.equal(1); // the rest wait in the line, not in Node's queue
    const ids = await Promise.all(answers);
    expect(sends).to.equal(BURST);
    // Each client got the id of the socket the server accepted for it: none lost, none swapped.
    expect(ids).to.deep.equal(ports.map((port) => byPort.get(port)));
  });

  it('closes the sockets still waiting when it is closed (its worker died)', async () => {
    child = fork(CHILD);
    await once(child, 'message');
    const line = new HandOverLine({ process: child, send: (...args) => child.send(...args) });
    server = net.createServer({ pauseOnConnect: true });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const client = net.connect(server.address().port, '127.0.0.1');
    const [socket] = await once(server, 'connection');
    const waiting = new net.Socket(); // a socket that never reaches the child: the line is busy with the first
    line.push(socket, { id: 0 });
    line.push(waiting, { id: 1 });
    line.close();
    expect(waiting.destroyed).to.equal(true);
    client.destroy();
  });
});
