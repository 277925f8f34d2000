#!/usr/bin/env node
// Several gateway nodes on one Redis, beside one node on the memory engine,
// in one run (loopback only, every load stopping by itself): for each setup,
// --publishers clients per node each keep --window publishes in flight on
// its own channel for --seconds, and one subscriber on every node holds every
// publisher's channel, so each publish is delivered once on every node (and
// once more to its publisher, whose copy times it). Reported: publishes/s,
// deliveries/s, publish → own copy p50/p99, the redis-server's CPU and its
// INFO commandstats calls per publish, and each node's CPU (primary and
// worker) per delivery it made. The setups: memory with 1 node, Redis with
// 1 node, Redis with --nodes nodes (one worker each); with --baseline DIR,
// the two Redis setups again with that checkout's gateway (an older tree).
//
//   npm run bench:nodes -- [--nodes 3] [--seconds 3] [--publishers 4] [--window 16] [--baseline DIR] [--json scripts/results/nodes.json]
import '../lib/runtime/node-version.js';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import WebSocket from 'ws';
import { Server } from './bench/servers.js';
import { RedisServer } from './harness/redis.js';
import { echoes, redisCost, costPerPublish } from './bench/scenarios/redis.js';
import { sampleTree, cpuBetween } from './bench/proc-sampler.js';
import { subscribeFrame } from '../lib/loadgen/frames.js';
import { quantile } from '../lib/loadgen/quantile.js';
import { eventually } from './harness/gateway.js';
import { scriptArgs } from './harness/args.js';

const { values, usageError } = scriptArgs({
  usage: '[options]',
  about: 'Several gateway nodes on one Redis beside one node on the memory engine, in one run.',
  options: {
    nodes: { type: 'string', default: '3', describe: 'Redis nodes in the several-node setup' },
    seconds: { type: 'string', default: '3', describe: 'load per setup' },
    publishers: { type: 'string', default: '4', describe: 'publishing clients per node' },
    window: { type: 'string', default: '16', describe: 'publishes each keeps in flight' },
    baseline: { type: 'string', describe: "an older checkout whose gateway runs the Redis setups again" },
    json: { type: 'string', default: new URL('./results/nodes.json', import.meta.url).pathname, describe: 'where the figures go' }
  }
});
const NODES = Number(values.nodes);
const SECONDS = Number(values.seconds);
const PUBLISHERS = Number(values.publishers);
const WINDOW = Number(values.window);
for (const [name, value] of Object.entries({ nodes: NODES, seconds: SECONDS, publishers: PUBLISHERS, window: WINDOW })) {
  if (!(value > 0)) usageError(`--${name} must be a positive number, got ${values[name]}`);
}

const SETUPS = [
  ['memory', 1],
  ['redis', 1],
  ['redis', NODES]
];
const old = values.baseline && { label: 'old gateway', script: path.resolve(values.baseline, 'bin/gateway.js') };
const store = await RedisServer.start();
const runs = [];
try {
  for (const [engine, nodes, tree] of [...SETUPS, ...(old ? SETUPS.slice(1).map((setup) => [...setup, old]) : [])]) {
    await store.command('FLUSHALL'); // each setup starts its channels from seq 1
    runs.push(await measure(engine, nodes, tree));
  }
} finally {
  await store.remove();
}

const result = {
  meta: {
    date: new Date().toISOString().slice(0, 16).replace('T', ' ') + ' UTC',
    machine: `${os.availableParallelism()} cores (${os.cpus()[0]?.model.trim()}), Node ${process.version}`,
    command: `node scripts/bench-nodes.js ${process.argv.slice(2).join(' ')}`.trim(),
    options: { nodes: NODES, seconds: SECONDS, publishersPerNode: PUBLISHERS, window: WINDOW }
  },
  runs
};
writeFileSync(values.json, JSON.stringify(result, null, 2) + '\n');
console.log('| setup | publishes/s | deliveries/s | p50 (ms) | p99 (ms) | redis-server CPU µs/publish | Redis calls/publish | node CPU µs/delivery |');
console.log('|---|---|---|---|---|---|---|---|');
for (const r of runs) {
  const perNode = r.nodes.map((n) => n.cpuUsPerDelivery).join(', ');
  console.log(`| ${r.setup} | ${r.publishesPerSec} | ${r.deliveriesPerSec} | ${r.p50Ms} | ${r.p99Ms} | ${r.redisCpuUsPerPublish ?? '—'} | ${r.redisCallsPerPublish ?? '—'} | ${perNode} |`);
}
console.log(`(written to ${values.json})`);

/**
 * One setup: `nodes` gateways of one worker on `engine`, the load on all of them at once.
 * @param {{label: string, script: string}} [tree] another checkout's gateway
 */
async function measure(engine, nodes, tree = { label: 'gateway' }) {
  const flags = ['--workers', '1', '--max-publish-rate', '1000000', '--max-subscriptions', String(nodes * PUBLISHERS), '--engine', engine, '--redis-url', store.url];
  const servers = await Promise.all(Array.from({ length: nodes }, () => Server.start('gateway', flags, [], tree.script)));
  try {
    for (const server of servers) await eventually(async () => (await server.metric('gateway_engine_up')) === 1, { timeout: 10000, what: 'engine up' });
    const channels = servers.flatMap((_, n) => Array.from({ length: PUBLISHERS }, (_, p) => `node${n}-p${p}`));
    const subscribers = await Promise.all(servers.map((server) => subscriberOf(server.url, channels)));
    const cpuBefore = servers.map((server) => sampleTree(server.pid));
    const redisBefore = engine === 'redis' ? await redisCost(store) : undefined;
    const started = performance.now();
    const loads = await Promise.all(servers.map((server, n) => Promise.all(channels.slice(n * PUBLISHERS, (n + 1) * PUBLISHERS).map((channel) => echoes(server.url, channel, WINDOW, SECONDS)))));
    const publishes = loads.flat().reduce((sum, run) => sum + run.latenciesUs.length, 0);
    // Every publish reaches every node's subscriber: wait for the last of them, then take the figures.
    await eventually(() => subscribers.every((s) => s.received >= publishes), { timeout: 10000, interval: 10, what: 'every delivery' }).catch(() => {});
    const wall = (performance.now() - started) / 1000;
    const cpuAfter = servers.map((server) => sampleTree(server.pid));
    const redisAfter = redisBefore && (await redisCost(store));
    for (const s of subscribers) s.ws.terminate();
    const failed = loads.flat().find((run) => run.error !== undefined);
    const short = failed?.error ?? (subscribers.some((s) => s.received < publishes) ? 'a subscriber missed publishes' : undefined);
    const latenciesUs = loads.flat().flatMap((run) => run.latenciesUs);
    const perNode = servers.map((server, n) => {
      const delivered = subscribers[n].received + loads[n].reduce((sum, run) => sum + run.latenciesUs.length, 0);
      const { primaryUs, workersUs } = cpuBetween(cpuBefore[n], cpuAfter[n], server.pid);
      return { delivered, primaryUs: Math.round(primaryUs), workersUs: Math.round(workersUs), cpuUsPerDelivery: round2((primaryUs + workersUs) / delivered) };
    });
    const deliveries = perNode.reduce((sum, node) => sum + node.delivered, 0);
    const cost = redisBefore === undefined ? {} : costPerPublish(redisBefore, redisAfter, publishes);
    return {
      setup: `${tree.label}: ${nodes} node${nodes > 1 ? 's' : ''}, --engine ${engine}`,
      short,
      publishes,
      publishesPerSec: Math.round(publishes / SECONDS),
      deliveriesPerSec: Math.round(deliveries / wall),
      p50Ms: round2(quantile(latenciesUs, 0.5) / 1000),
      p99Ms: round2(quantile(latenciesUs, 0.99) / 1000),
      ...(redisBefore === undefined
        ? {}
        : {
            redisCpuUsPerPublish: round2(cost.redisCpuUsPerPublish),
            redisCallsPerPublish: round2(cost.redisCallsPerPublish),
            redisCommandsPerPublish: cost.redisCommandsPerPublish
          }),
      nodes: perNode
    };
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
  }
}

/** One client on `url` subscribed to every channel, counting the messages it gets. */
async function subscriberOf(url, channels) {
  const ws = new WebSocket(url, { perMessageDeflate: false });
  await once(ws, 'open');
  const subscriber = { ws, received: 0 };
  let acked = 0;
  const allAcked = new Promise((resolve) => {
    ws.on('message', (raw) => {
      // Counted by their start, not parsed: the measurement must not cost more than the delivery.
      if (raw[9] === 0x6d) subscriber.received++; // {"type":"message"…
      else if (raw[9] === 0x61 && ++acked === channels.length) resolve(); // {"type":"ack"…
    });
  });
  for (const channel of channels) ws.send(subscribeFrame(channel));
  await allAcked;
  return subscriber;
}

function round2(x) {
  return Math.round(x * 100) / 100;
}
