#!/usr/bin/env node
// What webhooks cost, side by side in one run:
// - the sender: events/s the primary's webhook queue (batched, signed, sent
//   with undici, one batch at a time) sustains to a local endpoint in another
//   process that answers 200 at once, and its CPU per event;
// - occupancy tracking: a client subscribes to and unsubscribes from fresh
//   channels (each one an occupied and a vacated: the worst case), against a
//   real gateway under each engine with and without --webhook-url; the
//   primary's CPU per subscribe+unsubscribe pair, and pairs/s.
//
// Each row runs --rounds times, off and on alternating; the median is shown.
//
//   node scripts/bench-webhooks.js [--events 200000] [--pairs 20000] [--rounds 3] [--json FILE]
// (the redis rows need redis-server on PATH: a throwaway one is started.)
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { once } from 'node:events';
import readline from 'node:readline';
import { scriptArgs } from './harness/args.js';
import { startGateway, eventually } from './harness/gateway.js';
import { RedisServer } from './harness/redis.js';
import { cpuUsOf } from './bench/proc-sampler.js';
import WebSocket from 'ws';
import { WebhookQueue, Result } from '../lib/webhooks/queue.js';
import { webhookClient, webhookSender } from '../lib/webhooks/send.js';

const SECRET = 'bench-webhook-secret-that-is-long-enough-0123';
const WINDOW = 200; // subscribes and unsubscribes in flight on the client's connection
const { values } = scriptArgs({ usage: '[--events 200000] [--pairs 20000] [--rounds 3] [--json FILE]', options: { events: { type: 'string', default: '200000' }, pairs: { type: 'string', default: '20000' }, rounds: { type: 'string', default: '3' }, json: { type: 'string' } } });

const endpoint = await startEndpoint();
try {
  const sender = await senderRate(Number(values.events), endpoint.url);
  console.log(`sender: ${sender.events} events in ${sender.seconds} s: ${sender.eventsPerSec} events/s, ${sender.requests} requests, ${sender.cpuUsPerEvent} µs CPU per event (sender's process)`);
  const occupancy = [];
  for (const engine of ['memory', 'redis']) {
    const runs = { false: [], true: [] };
    for (let round = 0; round < Number(values.rounds); round++) {
      for (const webhooks of [false, true]) runs[webhooks].push(await subscribeCost(engine, webhooks, Number(values.pairs), endpoint.url));
    }
    for (const webhooks of [false, true]) {
      const row = median(runs[webhooks], 'primaryCpuUsPerPair');
      row.rounds = runs[webhooks].map(({ pairsPerSec, primaryCpuUsPerPair }) => ({ pairsPerSec, primaryCpuUsPerPair }));
      occupancy.push(row);
      console.log(
        `--engine ${engine}${webhooks ? ' --webhook-url' : '              '}: ${row.pairs} subscribe+unsubscribe pairs, ${row.pairsPerSec} pairs/s, primary CPU ${row.primaryCpuUsPerPair} µs per pair${webhooks ? `, ${row.eventsSent} events sent` : ''}`
      );
    }
  }
  for (const engine of ['memory', 'redis']) {
    const [off, on] = occupancy.filter((r) => r.engine === engine);
    console.log(`--engine ${engine}: occupancy tracking adds ${round1(on.primaryCpuUsPerPair - off.primaryCpuUsPerPair)} µs of primary CPU per subscribe+unsubscribe pair (both transitions)`);
  }
  if (values.json) writeFileSync(values.json, JSON.stringify({ node: process.version, sender, occupancy }, null, 2) + '\n');
} finally {
  endpoint.proc.kill();
}

/** The queue as the primary runs it, fed `count` events as fast as it takes them. */
async function senderRate(count, url) {
  const send = webhookSender(webhookClient(), { url, secret: SECRET });
  let sent = 0;
  let requests = 0;
  const queue = new WebhookQueue({
    post: (body) => {
      requests++;
      return send(body);
    },
    count: (result, n) => {
      if (result === Result.SENT) sent += n;
      else throw new Error(`the endpoint failed a batch (${result})`);
    },
    log: console
  });
  const cpu = process.cpuUsage();
  const started = performance.now();
  for (let i = 0; i < count; i++) {
    queue.add({ name: i % 2 ? 'channel_vacated' : 'channel_occupied', channel: `bench:${i >> 1}` });
    if (i % 1000 !== 999) continue;
    await new Promise((resolve) => setImmediate(resolve)); // as events come: between other work
    while (queue.size > 10000) await new Promise((resolve) => setTimeout(resolve, 1)); // sustained: a backlog, never an overflow
  }
  await queue.whenEmpty();
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  if (sent !== count) throw new Error(`sent ${sent} of ${count}`);
  return { events: count, requests, seconds: round2(seconds), eventsPerSec: Math.round(count / seconds), cpuUsPerEvent: round2((used.user + used.system) / count) };
}

/** `pairs` subscribes and unsubscribes of fresh channels on one connection, WINDOW in flight. */
async function subscribeCost(engine, webhooks, pairs, url) {
  const redis = engine === 'redis' ? await RedisServer.start() : undefined;
  const args = ['--workers', '1', '--max-subscriptions', String(WINDOW * 2)];
  if (redis) args.push('--engine', 'redis', '--redis-url', redis.url);
  if (webhooks) args.push('--webhook-url', url, '--webhook-secret', SECRET);
  const gw = await startGateway(args);
  try {
    const client = await requester(gw.url);
    const run = async (from, to) => {
      let next = from;
      const lane = async () => {
        while (next < to) {
          const channel = `occ-${next++}`;
          await client.request('subscribe', channel);
          await client.request('unsubscribe', channel);
        }
      };
      await Promise.all(Array.from({ length: WINDOW }, lane));
    };
    const warmUp = Math.min(2000, pairs);
    await run(0, warmUp);
    if (webhooks) await eventually(async () => (await eventsSent(gw)) >= 2 * warmUp, { what: 'warm-up events sent' });
    const sentBefore = webhooks ? await eventsSent(gw) : 0;
    const cpu = cpuUsOf(gw.proc.pid) / 1000;
    const started = performance.now();
    await run(1e9, 1e9 + pairs);
    const seconds = (performance.now() - started) / 1000;
    const primaryCpuMs = cpuUsOf(gw.proc.pid) / 1000 - cpu;
    client.ws.close();
    // What the run queued goes out; waited for after the clock stopped, and counted.
    let sent = 0;
    if (webhooks) await eventually(async () => (sent = (await eventsSent(gw)) - sentBefore) >= 2 * pairs, { timeout: 60000, what: 'events sent' });
    return { engine, webhooks, pairs, seconds: round2(seconds), pairsPerSec: Math.round(pairs / seconds), primaryCpuUsPerPair: round1((primaryCpuMs * 1000) / pairs), eventsSent: sent };
  } finally {
    await gw.stop();
    await redis?.remove();
  }
}

/** A WebSocket whose requests resolve on their answer (kept in a map: no search through past frames). */
async function requester(url) {
  const ws = new WebSocket(url);
  const waiting = new Map(); // id -> resolve
  let nextId = 1;
  ws.on('message', (data) => {
    const frame = JSON.parse(data);
    if (frame.type === 'error') throw new Error(`the gateway answered ${data}`);
    waiting.get(frame.id)?.(frame);
    waiting.delete(frame.id);
  });
  await once(ws, 'open');
  return {
    ws,
    request(type, channel) {
      const id = nextId++;
      ws.send(JSON.stringify({ type, channel, id }));
      return new Promise((resolve) => waiting.set(id, resolve));
    }
  };
}

async function eventsSent(gw) {
  return (await gw.metric('gateway_webhook_events_total', '{result="sent"}')) ?? 0;
}

/** An endpoint in its own process that takes every body with a 200. */
async function startEndpoint() {
  const code = `
    import http from 'node:http';
    const server = http.createServer((req, res) => { req.resume(); req.on('end', () => res.writeHead(200).end()); });
    server.keepAliveTimeout = 60000;
    server.listen(0, '127.0.0.1', () => console.log(server.address().port));`;
  const proc = spawn(process.execPath, ['--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [line] = await once(readline.createInterface({ input: proc.stdout }), 'line');
  return { proc, url: `http://127.0.0.1:${line}/hooks` };
}

/** The run with the median `key`. */
function median(runs, key) {
  return { ...[...runs].sort((a, b) => a[key] - b[key])[Math.floor(runs.length / 2)] };
}

function round1(x) {
  return Math.round(x * 10) / 10;
}

function round2(x) {
  return Math.round(x * 100) / 100;
}
