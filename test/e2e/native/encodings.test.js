// The encodings of a WebSocket against the real gateway (2 workers): the
// negotiation at the upgrade, the same conversation in JSON and in
// MessagePack, binary data on its way to MessagePack, JSON and SSE
// subscribers on the other worker (live and recovered), and bad frames in
// either encoding answered with an error while the connection stays.
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import WebSocket from 'ws';
import { Encoder, encode } from '@msgpack/msgpack';
import { startGateway, eventually } from '../../../scripts/harness/gateway.js';
import { OpenedClients, TestClient } from '../../helpers/client.js';
import { SseReader } from '../../helpers/sse.js';

const BYTES = Uint8Array.from([0, 1, 2, 250, 251, 255, 10, 34, 92]);
const B64 = Buffer.from(BYTES).toString('base64');

/** The upgrade's answer to a Sec-WebSocket-Protocol offer: the protocol chosen, or the refusal's status and body. */
function offer(url, protocols) {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, protocols);
    ws.on('open', () => {
      resolve({ protocol: ws.protocol });
      ws.terminate();
    });
    ws.on('unexpected-response', (req, res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode, body: JSON.parse(body) }));
    });
    ws.on('error', () => {});
  });
}

/** A client on the other worker than `worker`, by source address. */
async function connectAway(gw, worker, options = {}) {
  for (let i = 2; i < 40; i++) {
    const client = await TestClient.connect(gw.url, { ...options, localAddress: `127.0.0.${i}` });
    if (client.welcome.worker !== worker) return client;
    client.close();
  }
  throw new Error('no source address reached the other worker');
}

describe('encodings: JSON and MessagePack WebSockets', function () {
  let gw;
  const opened = new OpenedClients(() => gw.url);
  const connect = (options) => opened.connect(options);

  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'encodings-'));
    const config = join(dir, 'gateway.json');
    writeFileSync(config, JSON.stringify({ namespaces: [{ name: 'room', presence: true }, { name: 'bin' }] }));
    gw = await startGateway(['--config', config, '--max-publish-rate', '100000', '--history-size', '100']);
  });
  afterEach(() => opened.closeAll());
  after(() => gw?.stop());

  it('negotiates the encoding at the upgrade: none or gateway.json is JSON, gateway.msgpack MessagePack, only unknown ones 400', async () => {
    expect(await offer(gw.url, [])).to.deep.equal({ protocol: '' });
    expect(await offer(gw.url, ['gateway.json'])).to.deep.equal({ protocol: 'gateway.json' });
    expect(await offer(gw.url, ['gateway.msgpack'])).to.deep.equal({ protocol: 'gateway.msgpack' });
    expect(await offer(gw.url, ['mqtt', 'gateway.msgpack', 'gateway.json'])).to.deep.equal({ protocol: 'gateway.msgpack' });
    const refused = await offer(gw.url, ['mqtt', 'constructor']);
    expect(refused.status).to.equal(400);
    expect(refused.body.error).to.equal('bad_request');
    expect(refused.body.message).to.include('gateway.json, gateway.msgpack');
    expect(await gw.metric('gateway_upgrades_rejected_total', '{reason="bad_request"}')).to.be.at.least(1);
  });

  it('holds the same conversation, frame for frame, in both encodings', async () => {
    const conversation = async (encoding) => {
      const channel = `room:${encoding}`;
      const client = await connect({ encoding });
      const peer = await connect({ encoding: 'json', localAddress: '127.0.0.9' });
      await peer.subscribe(channel);
      const answers = [client.welcome];
      answers.push(await client.request({ type: 'ping' }));
      answers.push(await client.subscribe(channel));
      answers.push(await client.subscribe(channel)); // held already: where it stands
      answers.push(await client.publish(channel, { text: 'hi', n: [1, 2.5, null, true], nested: { deep: 'ok' } }));
      answers.push(await client.next((f) => f.type === 'message'));
      answers.push(await client.request({ type: 'presence_stats', channel }));
      answers.push(await client.request({ type: 'publish', channel: 'bad name!', data: 1 }));
      answers.push(await client.request({ type: 'nope' }));
      answers.push(await client.request({ type: 'subscribe', channel, since: { seq: -1, epoch: 'x' } }));
      answers.push(await client.request({ type: 'unsubscribe', channel }));
      const presence = await client.request({ type: 'presence', channel });
      answers.push(presence);
      // Fields that differ by run, not by encoding.
      return JSON.stringify(answers)
        .replaceAll(channel, '<channel>')
        .replace(/"connectionId":"[^"]+"/, '"connectionId":"<id>"')
        .replace(/"worker":\d/, '"worker":"<w>"')
        .replace(/"epoch":"[0-9a-z]+"/g, '"epoch":"<e>"')
        .replace(/"digest":\d+/, '"digest":"<d>"');
    };
    const json = await conversation('json');
    const msgpack = await conversation('msgpack');
    expect(msgpack).to.equal(json);
    expect(json).to.include('"type":"pong"').and.include('"code":"invalid_channel"').and.include('"code":"forbidden"');
  });

  it('carries binary data from a MessagePack publisher to MessagePack, JSON and SSE subscribers on the other worker', async () => {
    const publisher = await connect({ encoding: 'msgpack' });
    const binary = await connectAway(gw, publisher.welcome.worker, { encoding: 'msgpack' });
    const json = await connectAway(gw, publisher.welcome.worker);
    opened.track(binary, json);
    const sse = new SseReader(`${gw.http}/sse?channels=bin:live`, { localAddress: json.ws._socket.localAddress });
    try {
      await binary.subscribe('bin:live');
      await json.subscribe('bin:live');
      await eventually(() => sse.events.some((e) => e.event === 'ready'), { what: 'the SSE stream ready' });
      const ack = await publisher.publish('bin:live', BYTES);
      expect(ack).to.include({ type: 'ack', seq: 1 });
      // A JSON client's own {"b64": …} object stays an object for everyone.
      await publisher.publish('bin:live', { b64: B64 });

      await binary.next(() => binary.messages('bin:live').length === 2);
      const [bytes, object] = binary.messages('bin:live');
      expect(bytes.data).to.be.an.instanceof(Uint8Array);
      expect([...bytes.data]).to.deep.equal([...BYTES]);
      expect(object.data).to.deep.equal({ b64: B64 });
      await json.next(() => json.messages('bin:live').length === 2);
      expect(json.messages('bin:live').map((m) => m.data)).to.deep.equal([{ b64: B64 }, { b64: B64 }]);
      await eventually(() => sse.messages('bin:live').length === 2, { what: 'two SSE events' });
      expect(sse.messages('bin:live')[0]).to.deep.equal({ channel: 'bin:live', seq: 1, data: { b64: B64 } });
      expect(await gw.metric('gateway_bytes_sent_total', '{encoding="msgpack"}')).to.be.above(0);
    } finally {
      sse.req.destroy();
    }
  });

  it('recovers binary data through the history with since, as bytes or as {b64}', async () => {
    const publisher = await connect({ encoding: 'msgpack' });
    const ack = await publisher.subscribe('bin:history');
    await publisher.publish('bin:history', BYTES);
    await publisher.publish('bin:history', 'text');
    const since = { seq: 0, epoch: ack.epoch };
    const binary = await connect({ encoding: 'msgpack', localAddress: '127.0.0.3' });
    expect(await binary.request({ type: 'subscribe', channel: 'bin:history', since })).to.include({ recovered: true, seq: 2 });
    await binary.next(() => binary.messages('bin:history').length === 2);
    expect([...binary.messages('bin:history')[0].data]).to.deep.equal([...BYTES]);
    expect(binary.messages('bin:history')[1].data).to.equal('text');
    const json = await connect({ localAddress: '127.0.0.4' });
    await json.request({ type: 'subscribe', channel: 'bin:history', since });
    await json.next(() => json.messages('bin:history').length === 2);
    expect(json.messages('bin:history').map((m) => m.data)).to.deep.equal([{ b64: B64 }, 'text']);
  });

  it('answers bad frames in either encoding with bad_request, keeps the connection and affects no one else', async () => {
    const bystander = await connect({ encoding: 'msgpack', localAddress: '127.0.0.5' });
    await bystander.subscribe('bin:calm');
    const msgpack = await connect({ encoding: 'msgpack' });
    const json = await connect();
    const deep = new Encoder({ maxDepth: 1000 });
    let nested = 1;
    for (let i = 0; i < 100; i++) nested = [nested];
    const bad = [
      [msgpack, Buffer.from([0xc1]), 'not valid MessagePack'], // a byte MessagePack never uses
      [msgpack, Buffer.from([0x92, 0x01, 0x02]), 'must be a MessagePack map'], // [1, 2]
      [msgpack, Buffer.from(encode('just a string')), 'must be a MessagePack map'],
      [msgpack, Buffer.from([0x81, 0xa1, 0x78, 0xd6, 0x05, 1, 2, 3, 4]), 'extension'], // {x: ext 5}
      [msgpack, Buffer.from(deep.encode({ type: 'publish', channel: 'bin:calm', data: nested })), 'nested deeper'],
      [msgpack, Buffer.from(deep.encode({ type: 'ping', other: nested })), null], // deep outside data: decoded, ignored
      [msgpack, Buffer.from([0x81, 0xa4, 0x74, 0x79, 0x70, 0x65, 0xdb, 0xff, 0xff, 0xff, 0xff, 0x61]), 'not valid MessagePack'], // a 4 GB string declared
      [msgpack, Buffer.from(encode({ type: 'publish', channel: 'bin:calm', data: { inner: BYTES } })), 'whole of data'],
      [msgpack, '{"type":"ping"}', 'text frame on a gateway.msgpack'],
      [json, Buffer.from(encode({ type: 'ping' })), 'binary frame on a gateway.json']
    ];
    for (const [client, frame, expected] of bad) {
      const before = client.frames.length;
      client.ws.send(frame);
      const answer = await client.next((f) => client.frames.indexOf(f) >= before);
      if (expected === null) {
        expect(answer.type).to.equal('pong');
        continue;
      }
      expect(answer, String(expected)).to.include({ type: 'error', code: 'bad_request' });
      expect(answer.message).to.include(expected);
      // Still open and answering.
      expect(await client.request({ type: 'ping' })).to.include({ type: 'pong' });
    }
    await msgpack.publish('bin:calm', 'after');
    await bystander.next(() => bystander.messages('bin:calm').length === 1);
    expect(bystander.messages('bin:calm').map((m) => m.data)).to.deep.equal(['after']);
    expect(gw.proc.exitCode).to.equal(null);
  });
});
