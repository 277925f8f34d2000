#!/usr/bin/env node
// Relay throughput through the primary, isolated from WebSocket work: the real
// PrimaryRelay and IPC batching in a real cluster, with worker processes that
// publish small messages as fast as the IPC channel takes them (instead of
// parsing them from clients) and one that receives them. Each publish is sequenced by the primary and
// forwarded to the one worker subscribed to its channel. Runs batched and
// one-operation-per-send side by side.
//
//   node scripts/bench-relay.js [--seconds 5] [--workers 2] [--json FILE] [--namespaces N] [--guarded]
//
// --namespaces N: N namespaces configured, the channels spread over them
// (what the namespace table costs the relay); --guarded: every publish
// carries an idempotencyKey and a version (what those checks cost). Each
// publisher has its own channels, so its versions only grow.
import cluster from 'node:cluster';
import { writeFileSync } from 'node:fs';
import { scriptArgs } from './harness/args.js';
import { PrimaryRelay } from '../lib/primary/relay.js';
import { MemoryEngine } from '../lib/engines/memory.js';
import { resolveConfig } from '../lib/config/options.js';
import { Message, Op } from '../lib/core/ipc.js';

const CHANNELS = 100;
const IN_FLIGHT = 64; // sends a worker keeps outstanding: enough to keep the pipe full
const BURST = 256; // publishes a worker queues per tick

if (cluster.isPrimary) {
  const options = {
    seconds: { type: 'string', default: '5' },
    workers: { type: 'string', default: '2' },
    json: { type: 'string' },
    namespaces: { type: 'string', default: '0' },
    guarded: { type: 'boolean', default: false }
  };
  const { values } = scriptArgs({ usage: '[--seconds 5] [--workers 2] [--json FILE] [--namespaces N] [--guarded]', options });
  const results = {};
  const setup = { seconds: Number(values.seconds), publishers: Number(values.workers), namespaces: Number(values.namespaces), guarded: values.guarded };
  for (const mode of ['batched', 'unbatched']) results[mode] = await run(mode, setup);
  results.speedup = round(results.batched.publishesPerSec / results.unbatched.publishesPerSec);
  const extras = `${setup.namespaces} namespaces${setup.guarded ? ', idempotencyKey and version on every publish' : ''}`;
  console.log(`relay through the primary (${values.workers} publishing workers, ${values.seconds} s each, ${extras})`);
  for (const mode of ['batched', 'unbatched']) {
    const r = results[mode];
    console.log(`  ${mode.padEnd(9)} ${String(r.publishesPerSec).padStart(9)} publishes/s   ${r.primaryCpuUsPerPublish} µs primary CPU per publish   (sequenced ${r.sequencedPerSec}/s)`);
  }
  console.log(`  batching: ${results.speedup}× the throughput`);
  if (values.json) writeFileSync(values.json === '-' ? 1 : values.json, JSON.stringify(results, null, 2) + '\n');
} else if (process.env.RELAY_MODE === 'subscriber') {
  receiveForever();
} else {
  publishForever(process.env.RELAY_MODE === 'batched', JSON.parse(process.env.RELAY_CHANNELS), process.env.RELAY_GUARDED === '1');
}

async function run(mode, { seconds, publishers, namespaces, guarded }) {
  let relayed = 0;
  // The gateway's default engine, history included, as a publish pays for it.
  const names = Array.from({ length: namespaces }, (_, i) => ({ name: `ns${i}`, historySize: 50 + i }));
  const engine = new MemoryEngine(resolveConfig({ namespaces: names }));
  const relay = new PrimaryRelay({ engine, onPublish: (n) => (relayed += n) });
  // Each publisher's own channels, in the namespaces when there are some.
  const channelsOf = (p) => Array.from({ length: CHANNELS / publishers }, (_, c) => `${namespaces > 0 ? `ns${c % namespaces}:` : ''}p${p}c${c}`);
  // Publishers, plus one worker that only receives: it is subscribed to every
  // channel, so each publish is forwarded exactly once.
  const workers = Array.from({ length: publishers + 1 }, (_, i) =>
    cluster.fork({ RELAY_MODE: i === 0 ? 'subscriber' : mode, RELAY_CHANNELS: JSON.stringify(i === 0 ? [] : channelsOf(i)), RELAY_GUARDED: guarded ? '1' : '' })
  );
  const [subscriber] = workers;
  for (const worker of workers) {
    relay.attach(worker);
    worker.on('message', (msg) => msg?.type === Message.BATCH && relay.receive(worker, msg.ops));
  }
  await Promise.all(workers.map((w) => reply(w, 'up')));
  const all = Array.from({ length: publishers }, (_, p) => channelsOf(p + 1)).flat();
  relay.receive(subscriber, all.map((channel, c) => [Op.SUB, c + 1, channel]));
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

function publishForever(batched, channels, guarded) {
  let inFlight = 0;
  let n = 0;
  const key = (i) => `k${process.pid}-${i}`; // one key per publish: every check misses, every key is kept
  const sent = () => {
    inFlight--;
    pump();
  };
  // Keeps IN_FLIGHT sends outstanding: the IPC channel's own backpressure paces it.
  const pump = () => {
    while (inFlight < IN_FLIGHT) {
      inFlight++;
      const ops = [];
      for (let i = batched ? BURST : 1; i > 0; i--, n++) {
        const channel = channels[n % channels.length];
        ops.push(guarded ? [Op.PUB, 0, channel, `{"n":${n}}`, null, key(n), n + 1] : [Op.PUB, 0, channel, `{"n":${n}}`]);
      }
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
