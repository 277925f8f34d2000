#!/usr/bin/env node
// Baseline for the benchmarks: the plain single-process `ws` server most
// projects start from, with the gateway's protocol subset (welcome,
// subscribe, publish with a per-channel seq, fan-out) and the keepalive from
// ws's README (every interval, one sweep pings every client). Deliberately
// ordinary: the message is serialised once, then `ws.send` frames it again for
// each subscriber. GET /stats answers in the shape of the gateway's.
//
//   node scripts/baseline-ws.js [--port 8080] [--host 127.0.0.1] [--ping-interval 25000]
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { startBaseline } from './bench/baseline-server.js';

const channels = new Map(); // channel -> {seq, subscribers: Set}
const counts = { delivered: 0, subscriptions: 0 };
const loopDelay = monitorEventLoopDelay({ resolution: 10 });
loopDelay.enable();
// Never reset: a /stats read served in the same turn as a stall resets
// loopDelay before the late timer records it, and the stall would be lost.
const sinceStart = monitorEventLoopDelay({ resolution: 10 });
sinceStart.enable();

let nextId = 0;
const { wss, pingInterval, pings } = startBaseline({
  pingInterval: 25000,
  path: '/ws',
  request(req, res) {
    if (req.url !== '/stats') return void res.writeHead(404).end();
    res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(stats()));
  },
  connection(ws) {
    ws.channels = new Set();
    ws.on('message', (data) => handle(ws, data));
    ws.on('close', () => {
      for (const name of ws.channels) channels.get(name).subscribers.delete(ws);
      counts.subscriptions -= ws.channels.size;
    });
    ws.send(JSON.stringify({ type: 'welcome', connectionId: String(nextId++), worker: 1, pingInterval }));
  }
});

function handle(ws, data) {
  let frame;
  try {
    frame = JSON.parse(data);
  } catch {
    return ws.send('{"type":"error","code":"bad_request"}');
  }
  const { type, channel, id } = frame;
  if (type === 'subscribe' && typeof channel === 'string') {
    if (!channels.has(channel)) channels.set(channel, { seq: 0, subscribers: new Set() });
    if (!ws.channels.has(channel)) counts.subscriptions++;
    ws.channels.add(channel);
    channels.get(channel).subscribers.add(ws);
  } else if (type === 'publish' && typeof channel === 'string') {
    const target = channels.get(channel);
    if (target !== undefined) {
      const message = `{"type":"message","channel":${JSON.stringify(channel)},"seq":${++target.seq},"data":${JSON.stringify(frame.data)}}`;
      for (const subscriber of target.subscribers) subscriber.send(message);
      counts.delivered += target.subscribers.size;
    }
  } else {
    return ws.send(JSON.stringify({ type: 'error', id, code: 'bad_request' }));
  }
  ws.send(JSON.stringify({ type: 'ack', id }));
}

// The gateway's /stats shape, one worker; event-loop delay since the last read,
// and its worst since start.
function stats() {
  const ms = (ns) => Math.max(0, Math.round(ns / 1e4) / 100 - 10);
  const { rss, heapUsed } = process.memoryUsage();
  const figures = {
    worker: 1,
    pid: process.pid,
    connections: wss.clients.size,
    subscriptions: counts.subscriptions,
    delivered: counts.delivered,
    pings: pings(),
    eventLoopDelayMs: { p50: ms(loopDelay.percentile(50)), p99: ms(loopDelay.percentile(99)), max: ms(loopDelay.max), worst: ms(sinceStart.max) },
    rssBytes: rss,
    heapUsedBytes: heapUsed
  };
  loopDelay.reset();
  return { workers: [figures], totals: { connections: figures.connections, subscriptions: figures.subscriptions, delivered: figures.delivered } };
}
