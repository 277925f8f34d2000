// Coalesced writes: what a connection is sent within one turn of the worker's
// loop goes out in one write (lib/transport/coalesce.js), and --write-delay
// holds frames longer to batch more. A real gateway, real sockets: the
// subscriber's socket reads are counted as they arrive.
import { expect } from 'chai';
import { startGateway, eventually } from '../../../scripts/harness/gateway.js';
import { TestClient } from '../../helpers/client.js';
import { sleep } from '../../helpers/wait.js';

const CHANNELS = 20;

/** A client subscribed to `channels`, counting the reads that brought message frames. */
async function subscriber(url, channels) {
  const client = await TestClient.connect(url);
  for (const channel of channels) expect(await client.subscribe(channel)).to.include({ type: 'ack' });
  client.reads = [];
  client.ws._socket.on('data', (chunk) => chunk.includes('"type":"message"') && client.reads.push(Date.now()));
  return client;
}

/** Sends the frames in one write, so the worker reads (and handles) them in one turn. */
function sendTogether(client, frames) {
  const socket = client.ws._socket;
  socket.cork();
  for (const frame of frames) client.send({ ...frame, id: client.nextId++ });
  socket.uncork();
}

describe('coalesced writes', function () {
  this.timeout(60000);
  const gateways = [];
  const clients = [];
  afterEach(() => {
    for (const client of clients.splice(0)) client.close();
  });
  after(() => Promise.all(gateways.map((gw) => gw.stop())));

  it(`delivers one message on each of ${CHANNELS} channels, published in one turn, all and in order to a connection subscribed to them all`, async () => {
    const gw = await startGateway(['--workers', '1']);
    gateways.push(gw);
    const channels = Array.from({ length: CHANNELS }, (_, i) => `tick:${i}`);
    const sub = await subscriber(gw.url, channels);
    const pub = await TestClient.connect(gw.url);
    clients.push(sub, pub);
    sendTogether(
      pub,
      channels.map((channel, i) => ({ type: 'publish', channel, data: { i } }))
    );
    await eventually(() => sub.frames.filter((f) => f.type === 'message').length === CHANNELS, { what: `${CHANNELS} messages` });
    const messages = sub.frames.filter((f) => f.type === 'message');
    expect(messages.map((m) => [m.channel, m.seq, m.data.i])).to.deep.equal(channels.map((channel, i) => [channel, 1, i]));
    // One write from the worker: the kernel hands it over in one read (a second at most, should the
    // publishes have reached the worker in two reads of their own).
    expect(sub.reads.length).to.be.at.most(2);
    await eventually(() => pub.frames.filter((f) => f.type === 'ack').length === CHANNELS, { what: 'every publish acked' });
  });

  it('holds a connection’s frames up to --write-delay ms, so frames of turns apart go out in one write', async () => {
    const gw = await startGateway(['--workers', '1', '--write-delay', '1000']);
    gateways.push(gw);
    const sub = await subscriber(gw.url, ['slow:a', 'slow:b']);
    const pub = await TestClient.connect(gw.url);
    clients.push(sub, pub);
    const sentAt = Date.now();
    pub.send({ type: 'publish', channel: 'slow:a', data: 1 });
    await sleep(50);
    pub.send({ type: 'publish', channel: 'slow:b', data: 2 });
    await eventually(() => sub.frames.filter((f) => f.type === 'message').length === 2, { what: 'both messages' });
    expect(sub.frames.filter((f) => f.type === 'message').map((m) => m.data)).to.deep.equal([1, 2]);
    expect(sub.reads).to.have.length(1);
    expect(sub.reads[0] - sentAt).to.be.at.least(900); // held, not lost
  });
});
