#!/usr/bin/env node
// `npm run bench:peer`: one Pusher client load (bin/loadgen, --protocol pusher)
// against the gateway and against a Pusher-protocol peer server (Sockudo,
// --peer-bin), side by side, median of three rounds. Per server: CPU while
// idle with no connection (every process), resident memory per idle
// connection, CPU per fan-out delivery and deliveries per second (one
// channel, every connection subscribed, published through the app's HTTP
// API), and CPU per handshake: connect, connection_established and close,
// both in a burst (all at once) and in steady churn (--in-flight at a time,
// each opened once an earlier one closed).
// Beside them, plain ws speaking as little of Pusher's protocol as the load
// needs (scripts/baseline-pusher.js): what Node and ws cost before any
// gateway work. Connections are counted from the kernel's table, so every
// server is measured the same way. Writes scripts/results/peer.json.
//
//   node scripts/bench-peer.js [--peer-bin ~/.cargo/bin/sockudo] [--old ../main-checkout] [--rounds 3] [--in-flight 20]
import '../lib/runtime/node-version.js'; // first: an unsupported Node stops here, with one line
import os from 'node:os';
import path from 'node:path';
import { writeFileSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { scriptArgs } from './harness/args.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { Server } from './bench/servers.js';
import { Peer } from './bench/peer.js';
import { Load, shortfall } from './bench/load.js';
import { sampleTree, cpuBetween, rssOf } from './bench/proc-sampler.js';
import { publishInTurn } from './bench/publisher.js';
import { untilEstablished } from './bench/established.js';
import { churn } from './bench/churn.js';
import { BENCH_APP } from './bench/scenarios/pusher.js';
import { pusherClients } from './bench/clients.js';

const { values } = scriptArgs({
  usage: '[--peer-bin ~/.cargo/bin/sockudo] [--old ../main-checkout] [--rounds 3] [--in-flight 20]',
  options: {
    'peer-bin': { type: 'string', describe: 'a Pusher-protocol server binary to compare with (Sockudo)' },
    old: { type: 'string', describe: "an older checkout whose gateway runs beside this one's" },
    rounds: { type: 'string', default: '3', describe: 'rounds, each server once a round; figures are medians' },
    workers: { type: 'string', default: '2', describe: 'gateway workers' },
    connections: { type: 'string', default: '10000', describe: 'connections held, and opened in the burst' },
    'in-flight': { type: 'string', default: '20', describe: 'steady churn: handshakes under way at a time' },
    churn: { type: 'string', default: '5000', describe: 'steady churn: handshakes in all' },
    'fanout-seconds': { type: 'string', default: '5', describe: 'seconds of fan-out' },
    'idle-seconds': { type: 'string', default: '5', describe: 'seconds the idle CPU is read over' },
    out: { type: 'string', default: fileURLToPath(new URL('results/peer.json', import.meta.url)), describe: 'JSON results' }
  }
});
const ROUNDS = Number(values.rounds);
const WORKERS = Number(values.workers);
const SIZE = Number(values.connections);
const FANOUT_S = Number(values['fanout-seconds']);
const IDLE_S = Number(values['idle-seconds']);
const IN_FLIGHT = Number(values['in-flight']);
const CHURN = Number(values.churn);
const PER_AGENT = 10000; // an agent holds this many: each process stays under 20,000 open files
const SETTLE_MS = 3000; // a started server compiles and settles before its idle CPU is read
const HOLD_MS = 2000; // connections held this long before memory is read
const APP_FLAGS = ['--pusher-app-id', BENCH_APP.appId, '--pusher-key', BENCH_APP.key, '--pusher-secret', BENCH_APP.secret];
const CLIENTS = pusherClients(BENCH_APP);
const LOAD = { ...CLIENTS.load, 'local-address': '127.0.0.1-127.0.0.16' };

/** The servers compared: this tree's gateway under both balance modes, the old tree's, and the peer. */
function targets() {
  const list = [];
  const gateway = (label, kind, script) => ({
    label,
    start: () => Server.start(kind, ['--workers', String(WORKERS), '--max-publish-rate', '1000000', ...APP_FLAGS], [], script)
  });
  list.push(gateway(`gateway --balance ip (${WORKERS} workers)`, 'gateway'));
  list.push(gateway(`gateway --balance reuseport (${WORKERS} workers)`, 'gateway-reuseport'));
  if (values.old !== undefined) {
    const script = path.resolve(values.old, 'bin/gateway.js');
    list.push(gateway(`old gateway --balance ip (${WORKERS} workers)`, 'gateway', script));
    list.push(gateway(`old gateway --balance reuseport (${WORKERS} workers)`, 'gateway-reuseport', script));
  }
  list.push({ label: 'plain ws, Pusher floor (1 process)', start: () => Server.start('pusher-ws') });
  if (values['peer-bin'] === undefined) console.log('bench:peer: no --peer-bin given, the peer (e.g. ~/.cargo/bin/sockudo) is skipped');
  else list.push({ label: `peer ${path.basename(values['peer-bin'])}`, start: () => Peer.start(path.resolve(values['peer-bin']), BENCH_APP) });
  return list;
}

/** One round on one server: every figure, or {short} with why it fell short. */
async function measure(server) {
  await sleep(SETTLE_MS);
  const idleFrom = sampleTree(server.pid);
  await sleep(IDLE_S * 1000);
  const idle = cpuBetween(idleFrom, sampleTree(server.pid), server.pid);
  const idleUsPerS = idle.totalUs / idle.seconds;
  const busySince = (before) => {
    const used = cpuBetween(before, sampleTree(server.pid), server.pid);
    return used.totalUs - idleUsPerS * used.seconds;
  };

  // Held and subscribed: memory, then the fan-out over the same connections.
  const emptyRss = rssOf(sampleTree(server.pid));
  const held = new Load(server, { ...LOAD, connections: SIZE, rate: 5000, channels: 1, duration: HOLD_MS / 1000 + FANOUT_S + 5, processes: Math.ceil(SIZE / PER_AGENT) });
  if (!(await untilEstablished(server.port, (n) => n >= SIZE))) return { short: `never held ${SIZE}: ${shortfall(await held.report) ?? 'timeout'}` };
  await sleep(HOLD_MS);
  const rssPerIdleConnBytes = (rssOf(sampleTree(server.pid)) - emptyRss) / SIZE;
  const before = sampleTree(server.pid);
  const run = await publishInTurn(server.url, { channel: 'c0', seconds: FANOUT_S, messageSize: 128, clients: CLIENTS });
  await sleep(200); // the last publish's copies leave
  const fanoutUs = busySince(before);
  const report = await held.report;
  const deliveries = run.published * (SIZE + 1);
  if (run.error) return { short: `fan-out: ${run.error}` };
  if (report.received < run.published * SIZE) return { short: `fan-out: received ${report.received} of ${run.published * SIZE}` };
  if (!(await untilEstablished(server.port, (n) => n === 0))) return { short: 'connections still open after the hold' };

  // Handshakes: connect, connection_established, close; CPU until the last socket is gone.
  await sleep(1000);
  const connectsFrom = sampleTree(server.pid);
  const connects = new Load(server, { ...LOAD, connections: SIZE, rate: 20000, duration: 0.5, processes: Math.ceil(SIZE / PER_AGENT) });
  const short = shortfall(await connects.report);
  if (short !== undefined) return { short: `handshakes: ${short}` };
  await untilEstablished(server.port, (n) => n === 0);
  const handshakeUs = busySince(connectsFrom) / SIZE;

  // The same handshakes in steady churn, IN_FLIGHT at a time.
  await sleep(1000);
  const churnFrom = sampleTree(server.pid);
  await churn({ url: CLIENTS.url(server.url), count: CHURN, inFlight: IN_FLIGHT, expect: CLIENTS.welcome });
  if (!(await untilEstablished(server.port, (n) => n === 0))) return { short: 'churn: connections still open' };
  const churnUs = busySince(churnFrom) / CHURN;

  return {
    idleCpuMsPerS: idleUsPerS / 1000,
    rssPerIdleConnKiB: rssPerIdleConnBytes / 1024,
    fanoutCpuUsPerDelivery: fanoutUs / deliveries,
    deliveriesPerSec: deliveries / run.seconds,
    handshakeCpuUs: handshakeUs,
    churnHandshakeCpuUs: churnUs
  };
}

const median = (xs) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
};
const round2 = (x) => Math.round(x * 100) / 100;

const list = targets();
const runs = new Map(list.map((t) => [t.label, []]));
for (let round = 1; round <= ROUNDS; round++) {
  for (const target of list) {
    process.stderr.write(`bench:peer: round ${round}, ${target.label}\n`);
    let server;
    try {
      server = await target.start();
      const figures = await measure(server);
      process.stderr.write(`bench:peer:   ${JSON.stringify(figures, (k, v) => (typeof v === 'number' ? round2(v) : v))}\n`);
      runs.get(target.label).push(figures);
    } catch (err) {
      process.stderr.write(`bench:peer:   error: ${err.message.split('\n')[0]}\n`);
      runs.get(target.label).push({ short: err.message.split('\n')[0] });
    } finally {
      await server?.stop();
    }
  }
}

const FIGURES = ['rssPerIdleConnKiB', 'fanoutCpuUsPerDelivery', 'deliveriesPerSec', 'handshakeCpuUs', 'churnHandshakeCpuUs', 'idleCpuMsPerS'];
const results = list.map(({ label }) => {
  const ok = runs.get(label).filter((r) => r.short === undefined);
  const figures = ok.length === 0 ? undefined : Object.fromEntries(FIGURES.map((f) => [f, round2(median(ok.map((r) => r[f])))]));
  return { server: label, runs: runs.get(label), median: figures };
});
const meta = {
  date: new Date().toISOString().slice(0, 16).replace('T', ' ') + ' UTC',
  machine: `${os.availableParallelism()} cores (${os.cpus()[0]?.model.trim()}), Node ${process.version}, Linux ${os.release()}`,
  loadAverage: os.loadavg().map(round2),
  command: `node scripts/bench-peer.js ${process.argv.slice(2).join(' ')}`.trim(),
  connections: SIZE,
  churn: { handshakes: CHURN, inFlight: IN_FLIGHT },
  rounds: ROUNDS
};
mkdirSync(path.dirname(values.out), { recursive: true });
writeFileSync(values.out, JSON.stringify({ meta, results }, null, 2) + '\n');

const peer = results.find((r) => r.server.startsWith('peer'))?.median;
const header = ['figure (median of ' + ROUNDS + ')', ...results.map((r) => r.server)];
const rows = FIGURES.map((f) => [
  f,
  ...results.map(({ median: m }) => (m === undefined ? 'short' : peer !== undefined && peer[f] > 0 && m !== peer ? `${m[f]} (${round2(m[f] / peer[f])}x)` : String(m[f])))
]);
console.log([header, header.map(() => '---'), ...rows].map((r) => `| ${r.join(' | ')} |`).join('\n'));
const floor = results.find((r) => r.server.startsWith('plain ws'))?.median;
if (floor !== undefined) {
  console.log(`handshake CPU against the floor (burst of ${SIZE}; ${IN_FLIGHT} in flight):`);
  for (const { server, median: m } of results) {
    if (m === undefined || m === floor) continue;
    console.log(`  ${server}: ${round2(m.handshakeCpuUs / floor.handshakeCpuUs)}x; ${round2(m.churnHandshakeCpuUs / floor.churnHandshakeCpuUs)}x`);
  }
}
console.log(`load average at the end: ${meta.loadAverage.join(', ')}; written to ${values.out}`);
