// The load generator's lean WebSocket client: the wire functions alone, then a
// Pool against an in-process `ws` server that pings, fragments, refuses and
// closes, the cases the gateway rarely shows.
import { expect } from 'chai';
import crypto from 'node:crypto';
import http from 'node:http';
import { once } from 'node:events';
import { WebSocketServer } from 'ws';
import { readHandshake, readFrame, encodeFrame, Opcode, newKey } from '../../../lib/loadgen/wire.js';
import { Pool } from '../../../lib/loadgen/pool.js';
import { readEvents, streamRequest, eventEpoch } from '../../../lib/loadgen/sse-wire.js';
import { messageFrame } from '../../../lib/protocol/frames.js';
import { eventually } from '../../../scripts/harness/gateway.js';

function answer(key, status = '101 Switching Protocols', accept) {
  const expected = crypto.createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
  return Buffer.from(`HTTP/1.1 ${status}\r\nUpgrade: websocket\r\nSec-WebSocket-Accept: ${accept ?? expected}\r\n\r\n`);
}

/** Removes the client mask: what the server reads. */
function unmask(frame) {
  const b1 = frame[1] & 0x7f;
  const maskAt = b1 < 126 ? 2 : b1 === 126 ? 4 : 10;
  expect(frame[1] & 0x80).to.equal(0x80);
  const payload = Buffer.from(frame.subarray(maskAt + 4));
  for (let i = 0; i < payload.length; i++) payload[i] ^= frame[maskAt + (i & 3)];
  return payload;
}

describe('loadgen wire', () => {
  it('reads the handshake answer: upgrade, refusal by status, bad accept, incomplete', () => {
    const key = newKey();
    const ok = Buffer.concat([answer(key), Buffer.from([0x81, 0x01, 0x41])]);
    expect(readHandshake(ok, key)).to.deep.equal({ end: ok.length - 3, error: undefined });
    expect(readHandshake(answer(key, '503 Service Unavailable'), key).error).to.equal('HTTP 503');
    expect(readHandshake(answer(key, undefined, 'nope'), key).error).to.equal('bad Sec-WebSocket-Accept');
    expect(readHandshake(ok.subarray(0, 20), key)).to.equal(undefined);
  });

  it('reads SSE events: messages, `ready` with where the channel stands, `gap`; resumes with Last-Event-ID', () => {
    const seen = [];
    const table = { onText: (k, payload) => seen.push(`${k} ${payload}`) };
    const events = Buffer.from(
      'retry: 2000\n\n: ping\n\nid: 7.k3f9\ndata: {"channel":"c1","seq":7,"data":{}}\n\n' +
        'id: 9.x2\nevent: gap\ndata: {"channel":"c1"}\n\nid: 9.x2\nevent: ready\ndata: {}\n\nid: 10.x2\ndata: {"chan'
    );
    const rest = readEvents(events, 0, table, 3);
    expect(seen).to.deep.equal(['3 id: 7.k3f9\ndata: {"channel":"c1","seq":7,"data":{}}', '3 {"type":"gap"}', '3 {"type":"ready","seq":9,"epoch":"x2"}']);
    expect(eventEpoch(Buffer.from('id: 1.x3\ndata: {"channel":"c1","seq":1,"data":{}}'))).to.equal('x3');
    expect(events.toString('latin1', rest)).to.equal('id: 10.x2\ndata: {"chan');
    const url = new URL('ws://127.0.0.1:9/ws');
    expect(streamRequest(url, 'c1')).to.not.include('Last-Event-ID');
    expect(streamRequest(url, 'c1', '9.x2')).to.include('\r\nLast-Event-ID: 9.x2\r\n\r\n');
  });

  it('reads frames of each length form, and waits for incomplete ones', () => {
    const f = {};
    for (const size of [0, 125, 126, 65535, 65536, 200000]) {
      const header = size < 126 ? [0x81, size] : size < 65536 ? [0x81, 126, size >> 8, size & 255] : [0x81, 127, 0, 0, 0, 0, ...[24, 16, 8, 0].map((s) => (size >>> s) & 255)];
      const buf = Buffer.concat([Buffer.from(header), Buffer.alloc(size, 0x61)]);
      expect(readFrame(buf, 0, f), `size ${size}`).to.equal(buf.length);
      expect(f).to.deep.equal({ fin: true, opcode: Opcode.TEXT, start: header.length, end: buf.length });
      expect(readFrame(buf.subarray(0, buf.length - 1), 0, f)).to.equal(-1);
    }
    expect(readFrame(Buffer.from([0x81, 0x81, 0, 0, 0, 0, 0x41]), 0, f), 'masked by the server').to.equal(-2);
  });

  it('masks what it sends, whatever the length', () => {
    for (const size of [0, 5, 125, 126, 70000]) {
      const payload = crypto.randomBytes(size);
      const frame = encodeFrame(Opcode.TEXT, payload);
      expect(frame[0]).to.equal(0x81);
      expect(unmask(frame).equals(payload), `size ${size}`).to.equal(true);
    }
  });
});

describe('loadgen pool against a ws server', function () {
  let server;
  let wss;
  let url;
  let refuse = 0;
  const pongs = [];
  const serverCloses = [];

  before(async () => {
    server = http.createServer();
    wss = new WebSocketServer({ noServer: true });
    server.on('upgrade', (req, socket, head) => {
      if (refuse-- > 0) return socket.end('HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n');
      wss.handleUpgrade(req, socket, head, (ws) => {
        ws.on('pong', (data) => pongs.push(String(data)));
        ws.on('close', (code) => serverCloses.push(code));
        ws.on('message', (data) => {
          const frame = JSON.parse(data);
          if (frame.type !== 'subscribe') return;
          ws.send(JSON.stringify({ type: 'ack', id: frame.id }));
          ws.ping('hello');
          // One message in two fragments, then two whole ones.
          const message = messageFrame(frame.channel, 1, '{"t":1,"p":0,"n":0}');
          ws.send(message.slice(0, 10), { fin: false });
          ws.send(message.slice(10), { fin: true });
          ws.send(messageFrame(frame.channel, 2, '{"t":1,"p":0,"n":1}'));
          ws.send(messageFrame(frame.channel, 4, '{"t":1,"p":0,"n":2}'));
        });
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    url = `ws://127.0.0.1:${server.address().port}/ws`;
  });
  after(() => server.close());

  function plan(count) {
    return { agent: 0, first: 0, count, rate: 1000, maxHandshakes: 100, handshakeTimeout: 5000, url, addresses: [], channels: 2, messageSize: 64 };
  }

  it('answers pings, joins fragments, counts gaps, refusals by status and server closes by code', async () => {
    refuse = 3;
    const pool = new Pool(plan(10));
    await pool.ramp();
    expect(pool.failed).to.deep.equal({ 'HTTP 503': 3 });
    expect(pool.counts).to.include({ opened: 7, subscribed: 7 });
    await eventually(() => pool.counts.received === 21 && pongs.length === 7, { what: 'messages and pongs' });
    expect(pongs.every((p) => p === 'hello')).to.equal(true);
    expect(pool.counts).to.include({ gaps: 7, outOfOrder: 0 });
    for (const ws of wss.clients) ws.close(4000, 'bye');
    await eventually(() => pool.counts.open === 0, { what: 'closes' });
    expect(pool.dropped).to.deep.equal({ 4000: 7 });
  });

  it('closes with the closing handshake, so the server sees code 1000', async () => {
    const before = serverCloses.length;
    const pool = new Pool(plan(1));
    await pool.ramp();
    await pool.closeAll(5000);
    expect(pool.counts.open).to.equal(0);
    expect(pool.dropped).to.deep.equal({});
    await eventually(() => serverCloses.length === before + 1, { what: 'server close' });
    expect(serverCloses[before]).to.equal(1000);
  });
});
