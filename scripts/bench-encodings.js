#!/usr/bin/env node
// `npm run bench:encodings`: what the encodings and deltas cost and save, side
// by side on one gateway (2 workers) in one run. For each kind of
// subscriber (JSON, MessagePack, JSON with deltas, MessagePack with deltas):
//   - idle memory per connection: --idle connections (load generator agents)
//     subscribed to one channel, the workers' V8 heap and the tree's RSS
//     after the gateway's periodic GC, less the same before they came;
//   - bytes on the wire and CPU per delivery: a 2 KB JSON state updated
//     --updates times with small changes (two fields each), to --subscribers
//     subscribers of one channel, one update at a time (the publisher waits
//     for its own copy); bytes are gateway_bytes_sent_total's growth, CPU
//     the gateway tree's less its idle rate, per delivery.
// The variants take turns, --rounds times after a round that warms the
// gateway up (not counted); each figure is the median of its rounds, since
// a shared machine's noise is larger than some of the differences. Prints a
// table and writes scripts/results/encodings.json.
//
//   node scripts/bench-encodings.js [--subscribers 1000] [--updates 1000] [--idle 5000] [--rounds 3]
import '../lib/runtime/node-version.js';
import { mkdirSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { scriptArgs } from './harness/args.js';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import WebSocket from 'ws';
import { withServer } from './bench/servers.js';
import { Load, shortfall } from './bench/load.js';
import { idleCpuRate, busyCpuSince, memoryOf, workersReporting } from './bench/measure.js';
import { sampleTree } from './bench/proc-sampler.js';

const VARIANTS = [
  { name: 'json', flags: {} },
  { name: 'msgpack', flags: { encoding: 'msgpack' } },
  { name: 'json-delta', flags: { delta: true } },
  { name: 'msgpack-delta', flags: { encoding: 'msgpack', delta: true } }
];
const WORKERS = 2;
const GC_INTERVAL_MS = 1000;
const ECHO_TIMEOUT_MS = 10000;
const OUT = fileURLToPath(new URL('./results/encodings.json', import.meta.url));

const { values } = scriptArgs({
  usage: '[--subscribers 1000] [--updates 1000] [--idle 5000] [--rounds 3]',
  options: {
    subscribers: { type: 'string', default: '1000' },
    updates: { type: 'string', default: '1000' },
    idle: { type: 'string', default: '5000' },
    rounds: { type: 'string', default: '3' }
  }
});
const o = { subscribers: Number(values.subscribers), updates: Number(values.updates), idle: Number(values.idle), rounds: Number(values.rounds) };

/** A ~2 KB dashboard state; update(n) changes two of its fields. */
function dashboard() {
  const rows = Array.from({ length: 24 }, (_, i) => ({ symbol: `SYM${i}`, name: `Instrument number ${i}`, price: 100 + i, change: 0, volume: 1000 * i }));
  const state = { board: 'markets', updated: 0, rows };
  return {
    state,
    update(n) {
      const row = rows[n % rows.length];
      row.price = Math.round((row.price + ((n * 7) % 13) / 100 - 0.06) * 100) / 100;
      state.updated = n;
    }
  };
}

/** Publishes `updates` states one at a time on `channel`, each once its own copy came back. */
async function publishUpdates(url, channel, updates) {
  const ws = new WebSocket(url, { perMessageDeflate: false });
  let waiting;
  ws.on('message', (data) => {
    const frame = JSON.parse(data);
    if (frame.type === 'error') waiting?.reject(new Error(`${frame.code}: ${frame.message}`));
    if (frame.type === 'message' || (frame.type === 'ack' && frame.id === 0)) waiting?.resolve(frame);
  });
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  const turn = (frame) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no echo within ${ECHO_TIMEOUT_MS} ms`)), ECHO_TIMEOUT_MS);
      waiting = { resolve: (f) => (clearTimeout(timer), resolve(f)), reject };
      ws.send(JSON.stringify(frame));
    });
  try {
    await turn({ type: 'subscribe', channel, id: 0 });
    const { state, update } = dashboard();
    const bytes = Buffer.byteLength(JSON.stringify(state));
    const started = performance.now();
    for (let n = 1; n <= updates; n++) {
      update(n);
      await turn({ type: 'publish', channel, data: state });
    }
    return { bytes, seconds: (performance.now() - started) / 1000 };
  } finally {
    ws.terminate();
  }
}

/**
 * A counter, the largest of a few reads: the primary sums the workers'
 * answers, and a worker busy writing may answer too late to be counted in
 * one read (keepalive pings keep it from ever standing still).
 */
async function settled(server, name) {
  let most = 0;
  for (let i = 0; i < 4; i++) {
    most = Math.max(most, await server.metric(name));
    await sleep(250);
  }
  return most;
}

/** Resolves once the gateway reports no connection (/stats lags up to two seconds). */
async function emptied(server) {
  for (;;) {
    const { totals } = await server.stats();
    if (totals.connections === 0 && totals.subscriptions === 0) return;
    await sleep(250);
  }
}

/** Holds `count` subscribers of `channel` with the load generator until `use()` is done. */
async function holding(server, variant, count, channel, seconds, use) {
  await emptied(server); // the last phase's clients gone, so held() counts only these
  const load = new Load(server, {
    connections: count,
    rate: 5000,
    channels: 1,
    'channel-prefix': channel.slice(0, -1), // the load generator adds the index: 0
    duration: seconds,
    processes: Math.max(1, Math.ceil(count / 2500)),
    ...variant.flags
  });
  if (!(await load.held(server, { subscribed: true }))) return { short: shortfall(await load.report, false) };
  const figures = await use();
  const report = await load.report;
  return { ...figures, short: figures.short ?? shortfall(report), received: report.received, seqGaps: report.seqGaps };
}

async function idleMemory(server, variant) {
  await emptied(server);
  await sleep(2 * GC_INTERVAL_MS);
  const empty = await memoryOf(server);
  return holding(server, variant, o.idle, `state:idle-${variant.name}-0`, 8, async () => {
    await sleep(2.5 * GC_INTERVAL_MS);
    const full = await memoryOf(server);
    return { heapPerConnBytes: (full.heapBytes - empty.heapBytes) / o.idle, rssPerConnBytes: (full.rssBytes - empty.rssBytes) / o.idle };
  });
}

async function traffic(server, variant, round) {
  const figures = await publishedTo(server, variant, `state:${variant.name}-r${round}-0`);
  const expected = o.updates * o.subscribers;
  if (figures.short === undefined && figures.received !== expected) figures.short = `received ${figures.received} of ${expected}`;
  return figures;
}

async function publishedTo(server, variant, channel) {
  // Long enough for the updates at 30 a second, slower than the slowest seen on a busy 2-core machine.
  return holding(server, variant, o.subscribers, channel, 10 + Math.ceil(o.updates / 30), async () => {
    const idle = await idleCpuRate(server);
    const sentBefore = await settled(server, 'gateway_bytes_sent_total');
    const deltasBefore = await settled(server, 'gateway_deltas_total{result="sent"}');
    const before = sampleTree(server.pid);
    const run = await publishUpdates(server.url, channel, o.updates);
    const cpu = busyCpuSince(server, before, idle);
    const deliveries = o.updates * (o.subscribers + 1); // the publisher receives its own
    return {
      stateBytes: run.bytes,
      wireBytes: (await settled(server, 'gateway_bytes_sent_total')) - sentBefore,
      deltasSent: (await settled(server, 'gateway_deltas_total{result="sent"}')) - deltasBefore,
      cpuUsPerDelivery: cpu.totalUs / deliveries,
      updatesPerSec: o.updates / run.seconds
    };
  });
}

const dir = mkdtempSync(join(tmpdir(), 'bench-encodings-'));
const config = join(dir, 'gateway.json');
writeFileSync(config, JSON.stringify({ namespaces: [{ name: 'state', delta: true }] }));
// --max-buffered high: a load generator agent that falls behind on a busy machine is not cut as a slow consumer.
const flags = ['--config', config, '--workers', String(WORKERS), '--gc-interval', String(GC_INTERVAL_MS), '--max-publish-rate', '1000000', '--max-buffered', String(1 << 28)];

const rounds = await withServer('gateway', flags, async (server) => {
  await workersReporting(server, WORKERS);
  const out = [];
  for (let round = 0; round <= o.rounds; round++) {
    const results = [];
    for (const variant of VARIANTS) {
      const memory = await idleMemory(server, variant);
      const wire = await traffic(server, variant, round);
      results.push({ variant: variant.name, memory, wire });
      console.error(`round ${round}${round === 0 ? ' (warm-up)' : ''}: ${variant.name} ${JSON.stringify({ ...memory, ...wire })}`);
    }
    if (round > 0) out.push(results);
  }
  return out;
});

/** Each variant's figures: the median of its rounds (of two: their mean); a round that fell short is reported, not counted. */
const results = VARIANTS.map(({ name }) => {
  const runs = rounds.map((results) => results.find((r) => r.variant === name));
  const good = runs.filter((r) => (r.memory.short ?? r.wire.short) === undefined);
  const median = (part, key) => {
    const values = good.map((r) => r[part][key]).sort((a, b) => a - b);
    const mid = values.length / 2;
    return values.length === 0 ? null : Number.isInteger(mid) ? (values[mid - 1] + values[mid]) / 2 : values[Math.floor(mid)];
  };
  const shorts = runs.map((r) => r.memory.short ?? r.wire.short).filter((s) => s !== undefined);
  return {
    variant: name,
    short: shorts.length > 0 ? shorts.join('; ') : undefined,
    memory: { heapPerConnBytes: median('memory', 'heapPerConnBytes'), rssPerConnBytes: median('memory', 'rssPerConnBytes') },
    wire: {
      stateBytes: good[0]?.wire.stateBytes,
      wireBytes: median('wire', 'wireBytes'),
      deltasSent: median('wire', 'deltasSent'),
      cpuUsPerDelivery: median('wire', 'cpuUsPerDelivery'),
      updatesPerSec: median('wire', 'updatesPerSec'),
      received: median('wire', 'received'),
      seqGaps: median('wire', 'seqGaps')
    }
  };
});

const json = results.find((r) => r.variant === 'json');
const ratio = (a, b) => (typeof a === 'number' && typeof b === 'number' && b !== 0 ? a / b : null);
const rows = results.map((r) => ({
  variant: r.variant,
  short: r.short,
  wireBytes: r.wire.wireBytes,
  wireVsJson: ratio(r.wire.wireBytes, json.wire.wireBytes),
  bytesPerDelivery: r.wire.wireBytes / (o.updates * (o.subscribers + 1)),
  deltasSent: r.wire.deltasSent,
  cpuUsPerDelivery: r.wire.cpuUsPerDelivery,
  cpuVsJson: ratio(r.wire.cpuUsPerDelivery, json.wire.cpuUsPerDelivery),
  heapPerConnBytes: r.memory.heapPerConnBytes,
  rssPerConnBytes: r.memory.rssPerConnBytes,
  heapVsJson: ratio(r.memory.heapPerConnBytes, json.memory.heapPerConnBytes),
  rssVsJson: ratio(r.memory.rssPerConnBytes, json.memory.rssPerConnBytes),
  received: r.wire.received,
  seqGaps: r.wire.seqGaps,
  updatesPerSec: r.wire.updatesPerSec
}));

const fmt = (v, digits = 2) => (typeof v === 'number' ? v.toFixed(digits) : String(v));
console.log(
  `state ${json.wire.stateBytes} bytes JSON, ${o.updates} updates to ${o.subscribers} subscribers; idle memory over ${o.idle} connections; medians of ${o.rounds} rounds`
);
console.log('variant        wire MB  ×json  B/delivery  CPU µs/delivery  ×json  heap B/conn  ×json  RSS B/conn  ×json');
for (const r of rows) {
  console.log(
    [
      r.variant.padEnd(14),
      fmt(r.wireBytes / 1e6, 1).padStart(7),
      fmt(r.wireVsJson).padStart(6),
      fmt(r.bytesPerDelivery, 0).padStart(11),
      fmt(r.cpuUsPerDelivery).padStart(16),
      fmt(r.cpuVsJson).padStart(6),
      fmt(r.heapPerConnBytes, 0).padStart(12),
      fmt(r.heapVsJson).padStart(6),
      fmt(r.rssPerConnBytes, 0).padStart(11),
      fmt(r.rssVsJson).padStart(6),
      r.short ? `  SHORT: ${r.short}` : ''
    ].join(' ')
  );
}
mkdirSync(fileURLToPath(new URL('./results/', import.meta.url)), { recursive: true });
writeFileSync(OUT, JSON.stringify({ at: new Date().toISOString(), options: o, stateBytes: json.wire.stateBytes, workers: WORKERS, rows, rounds }, null, 2) + '\n');
console.log(`wrote ${OUT}`);
