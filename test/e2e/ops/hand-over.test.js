// The primary's hand-over line (lib/primary/master.js): a burst of TCP
// handles to one worker goes to Node up to a window at once, the rest as
// acknowledgements come back, in order, and none is lost.
import { fork } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { HandOverLine } from '../../../lib/primary/master.js';
import { sleep } from '../../helpers/wait.js';

const CHILD = fileURLToPath(new URL('../../fixtures/handle-echo.js', import.meta.url));
const BURST = 40; // past the window

describe('hand-over line', function () {
  let child;
  let server;
  afterEach(() => {
    child?.kill();
    server?.close();
  });

  it('gives Node a window of handles at once, the rest as they are acknowledged, and delivers a burst in order', async () => {
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
    expect(sends).to.equal(HandOverLine.WINDOW); // the rest wait in the line, not in Node's queue
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
    const count = HandOverLine.WINDOW + 1;
    const clients = Array.from({ length: count }, () => net.connect(server.address().port, '127.0.0.1'));
    while (accepted.length < count) await sleep(10);
    const lastPort = peerPort(accepted.at(-1));
    accepted.forEach((handle, id) => line.push(handle, { id })); // the last waits: the window is full
    line.close();
    // The closed handle's client sees its connection end, with no answer.
    const last = clients.find((client) => client.localPort === lastPort);
    let text = '';
    for await (const chunk of last) text += chunk;
    expect(text).to.equal('');
    clients.forEach((client) => client.destroy());
  });

  it('moves on past a handle whose acknowledgement never comes, and takes the late one in its stride', async () => {
    child = fork(CHILD);
    await once(child, 'message');
    let stalls = 0;
    const line = new HandOverLine({ process: child, send: (...args) => child.send(...args) }, () => stalls++);
    const accepted = [];
    server = await rawServer((handle) => accepted.push(handle));
    const count = HandOverLine.WINDOW + 2;
    const clients = Array.from({ length: count }, () => net.connect(server.address().port, '127.0.0.1'));
    const answers = clients.map(async (client) => {
      let text = '';
      for await (const chunk of client) text += chunk;
      return text;
    });
    while (accepted.length < count) await sleep(10);
    accepted.forEach((handle, id) => line.push(handle, { id }));
    // As if the first acknowledgement were lost: the watchdog's two visits give up on the oldest handle.
    line.watched = line.waiting;
    line.watch();
    expect(stalls).to.equal(1);
    expect((await Promise.all(answers)).every((text) => text !== '')).to.equal(true);
    expect(line.unacked).to.equal(0);
    expect(child.connected).to.equal(true);
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
