#!/usr/bin/env node
// Relay throughput through the primary, isolated from WebSocket work: the real
// PrimaryRelay and IPC batching in a real cluster, with worker processes that
// publish small messages as fast as the IPC channel takes them (instead of
// parsing them from clients) and one that receives them. Each publish is sequenced by the primary and
// forwarded to the one worker subscribed to its channel. Runs batched and
// one-operation-per-send side by side.
//
//   node scripts/bench-relay.js [--seconds 5] [--workers 2] [--json FILE]
import cluster from 'node:cluster';
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { PrimaryRelay } from '../lib/primary/relay.js';
import { MemoryEngine } from '../lib/engines/memory.js';
import { resolveConfig } from '../lib/config.js';
import { Message, Op } from '../lib/ipc.js';

const CHANNELS = 100;
const IN_FLIGHT = 64; // sends a worker keeps outstanding: enough to keep the pipe full
const BURST = 256; // publishes a worker queues per tick

if (cluster.isPrimary) {
  const { values } = parseArgs({ options: { seconds: { type: 'string', default: '5' }, workers: { type: 'string', default: '2' }, json: { type: 'string' } } });
  const results = {};
  for (const mode of ['batched', 'unbatched']) results[mode] = await run(mode, Number(values.seconds), Number(values.workers));
  results.speedup = round(results.batched.publishesPerSec / results.unbatched.publishesPerSec);
  console.log(`relay through the primary (${values.workers} publishing workers, ${values.seconds} s each)`);
  for (const mode of ['batched', 'unbatched']) {
    const r = results[mode];
    console.log(`  ${mode.padEnd(9)} ${String(r.publishesPerSec).padStart(9)} publishes/s   ${r.primaryCpuUsPerPublish} µs primary CPU per publish   (sequenced ${r.sequencedPerSec}/s)`);
  }
  console.log(`  batching: ${results.speedup}× the throughput`);
  if (values.json) writeFileSync(values.json === '-' ? 1 : values.json, JSON.stringify(results, null, 2) + '\n');
} else if (process.env.RELAY_MODE === 'subscriber') {
  receiveForever();
} else {
  publishForever(process.env.RELAY_MODE === 'batched');
}

async function run(mode, seconds, publishers) {
  let relayed = 0;
  // The gateway's default engine, history included, as a publish pays for it.
  const engine = new MemoryEngine(resolveConfig({}));
  const relay = new PrimaryRelay({ engine, onPublish: (n) => (relayed += n) });
  // Publishers, plus one worker that only receives: it is subscribed to every
  // channel, so each publish is forwarded exactly once.
  const workers = Array.from({ length: publishers + 1 }, (_, i) => cluster.fork({ RELAY_MODE: i === 0 ? 'subscriber' : mode }));
  const [subscriber] = workers;
  for (const worker of workers) {
    relay.attach(worker);
    worker.on('message', (msg) => msg?.type === Message.BATCH && relay.receive(worker, msg.ops));
  }
  await Promise.all(workers.map((w) => reply(w, 'up')));
  relay.receive(subscriber, Array.from({ length: CHANNELS }, (_, c) => [Op.SUB, `c${c}`, c + 1]));
  for (const worker of workers.slice(1)) worker.send({ type: 'go' });

  await sleep(500); // warm up
  const startCpu = process.cpuUsage();
  const startRelayed = relayed;
  const startDelivered = await count(subscriber);
  const started = performance.now();
  await sleep(seconds * 1000);
  const delivered = (await count(subscriber)) - startDelivered;
  const elapsed = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(startCpu);
  const sequenced = relayed - startRelayed;
  for (const worker of workers) worker.kill();
  await Promise.all(workers.map((w) => new Promise((resolve) => w.once('exit', resolve))));
  return {
    publishesPerSec: Math.round(delivered / elapsed), // sequenced and delivered to the subscribed worker
    sequencedPerSec: Math.round(sequenced / elapsed),
    primaryCpuUsPerPublish: round((cpu.user + cpu.system) / sequenced)
  };
}

/** The next message of the given type from a worker. */
function reply(worker, type) {
  return new Promise((resolve) => {
    const onMessage = (msg) => {
      if (msg?.type !== type) return;
      worker.off('message', onMessage);
      resolve(msg);
    };
    worker.on('message', onMessage);
  });
}

async function count(subscriber) {
  const answer = reply(subscriber, 'count');
  subscriber.send({ type: 'count' });
  return (await answer).count;
}

function publishForever(batched) {
  let inFlight = 0;
  let n = 0;
  const sent = () => {
    inFlight--;
    pump();
  };
  // Keeps IN_FLIGHT sends outstanding: the IPC channel's own backpressure paces it.
  const pump = () => {
    while (inFlight < IN_FLIGHT) {
      inFlight++;
      const ops = [];
      for (let i = batched ? BURST : 1; i > 0; i--) ops.push([Op.PUB, `c${n % CHANNELS}`, `{"n":${n++}}`, 0]);
      process.send({ type: Message.BATCH, ops }, undefined, undefined, sent);
    }
  };
  process.on('message', (msg) => msg.type === 'go' && pump());
  process.send({ type: 'up' });
}

function receiveForever() {
  let received = 0;
  process.on('message', (msg) => {
    if (msg.type === Message.BATCH) received += msg.ops.length;
    else if (msg.type === 'count') process.send({ type: 'count', count: received });
  });
  process.send({ type: 'up' });
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function round(x) {
  return Math.round(x * 100) / 100;
}
