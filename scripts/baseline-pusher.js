#!/usr/bin/env node
// Baseline for bench:peer: the plain single-process `ws` server a Pusher
// client could talk to, with as little as the protocol lets it do: it sends
// `pusher:connection_established`, answers `pusher:ping`, takes subscriptions
// to public channels and fans out what `POST /apps/:id/events` publishes
// (unsigned: nothing is checked), with the keepalive from ws's README. What
// it costs is what Node and ws cost a Pusher connection before any gateway
// work: the floor under the gateway's figures.
//
//   node scripts/baseline-pusher.js [--port 8080] [--host 127.0.0.1] [--ping-interval 120000]
import { startBaseline } from './bench/baseline-server.js';

const channels = new Map(); // channel -> Set of sockets
let nextId = 0;

const { pingInterval } = startBaseline({
  pingInterval: 120000,
  request(req, res) {
    if (req.method !== 'POST' || !/^\/apps\/[^/]+\/events$/.test(new URL(req.url, 'http://x').pathname)) return void res.writeHead(404).end();
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      let event;
      try {
        event = JSON.parse(Buffer.concat(chunks));
      } catch {
        return void res.writeHead(400).end('{}');
      }
      for (const channel of event.channels ?? [event.channel]) {
        const frame = JSON.stringify({ event: event.name, channel, data: event.data });
        for (const ws of channels.get(channel) ?? []) ws.send(frame);
      }
      res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
    });
  },
  connection(ws) {
    ws.channels = new Set();
    ws.on('message', (data) => handle(ws, data));
    ws.on('close', () => {
      for (const channel of ws.channels) channels.get(channel).delete(ws);
    });
    const established = { socket_id: `${process.pid}.${nextId++}`, activity_timeout: Math.round(pingInterval / 1000) };
    ws.send(JSON.stringify({ event: 'pusher:connection_established', data: JSON.stringify(established) }));
  }
});

function handle(ws, data) {
  ws.isAlive = true;
  let frame;
  try {
    frame = JSON.parse(data);
  } catch {
    return;
  }
  const channel = frame.data?.channel;
  if (frame.event === 'pusher:ping') ws.send('{"event":"pusher:pong","data":"{}"}');
  else if (frame.event === 'pusher:subscribe' && typeof channel === 'string') {
    if (!channels.has(channel)) channels.set(channel, new Set());
    channels.get(channel).add(ws);
    ws.channels.add(channel);
    ws.send(JSON.stringify({ event: 'pusher_internal:subscription_succeeded', channel, data: '{}' }));
  } else if (frame.event === 'pusher:unsubscribe' && typeof channel === 'string') {
    channels.get(channel)?.delete(ws);
    ws.channels.delete(channel);
  }
}
