#!/usr/bin/env node
// `npm run bench:connect-close`: a connection's whole life on the native
// protocol (connect, welcome, close), the cost a reconnect storm pays per
// client: CPU of the whole server (every process, less its own idle rate)
// per connection, from the first connect until the kernel shows none left.
// The gateway under --balance ip and reuseport, plain ws, and an older
// checkout's gateway with --old, each round in turn; median of the rounds.
// (bench:peer measures the same for Pusher's protocol beside a peer.)
//
//   node scripts/bench-connect-close.js [--old ../main-checkout] [--rounds 3] [--connections 10000] [--out FILE]
import '../lib/runtime/node-version.js'; // first: an unsupported Node stops here, with one line
import path from 'node:path';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { scriptArgs } from './harness/args.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { Server } from './bench/servers.js';
import { Load, shortfall } from './bench/load.js';
import { sampleTree, cpuBetween } from './bench/proc-sampler.js';
import { untilEstablished } from './bench/established.js';

const { values } = scriptArgs({
  usage: '[--old ../main-checkout] [--rounds 3] [--connections 10000] [--out FILE]',
  options: {
    old: { type: 'string' },
    rounds: { type: 'string', default: '3' },
    workers: { type: 'string', default: '2' },
    connections: { type: 'string', default: '10000' },
    out: { type: 'string', default: fileURLToPath(new URL('results/connect-close.json', import.meta.url)) }
  }
});
const SIZE = Number(values.connections);
const WORKERS = String(values.workers);
const PER_AGENT = 15000;
const IDLE_MS = 1000;

/** The servers, each with how to start it. */
function targets() {
  const gateway = (label, kind, script) => ({ label, start: () => Server.start(kind, ['--workers', WORKERS], [], script) });
  const list = [gateway('gateway --balance ip', 'gateway'), gateway('gateway --balance reuseport', 'gateway-reuseport')];
  if (values.old !== undefined) {
    const script = path.resolve(values.old, 'bin/gateway.js');
    list.push(gateway('old gateway --balance ip', 'gateway', script), gateway('old gateway --balance reuseport', 'gateway-reuseport', script));
  }
  list.push({ label: 'plain ws', start: () => Server.start('ws') });
  return list;
}

/** One round on one server: CPU µs per connection, or {short}. */
async function measure(server) {
  await sleep(IDLE_MS);
  const idleFrom = sampleTree(server.pid);
  await sleep(IDLE_MS);
  const idle = cpuBetween(idleFrom, sampleTree(server.pid), server.pid);
  const before = sampleTree(server.pid);
  const load = new Load(server, { connections: SIZE, rate: 20000, duration: 0.5, processes: Math.ceil(SIZE / PER_AGENT), 'local-address': '127.0.0.1-127.0.0.16' });
  const short = shortfall(await load.report);
  if (short !== undefined) return { short };
  if (!(await untilEstablished(server.port, (n) => n === 0))) return { short: 'connections still open' };
  const used = cpuBetween(before, sampleTree(server.pid), server.pid);
  return { cpuUsPerConnection: (used.totalUs - (idle.totalUs / idle.seconds) * used.seconds) / SIZE, primaryUsPerConnection: used.primaryUs / SIZE };
}

const list = targets();
const runs = new Map(list.map((t) => [t.label, []]));
for (let round = 1; round <= Number(values.rounds); round++) {
  for (const target of list) {
    let server;
    try {
      server = await target.start();
      const figures = await measure(server);
      runs.get(target.label).push(figures);
      process.stderr.write(`bench:connect-close: round ${round}, ${target.label}: ${JSON.stringify(figures, (k, v) => (typeof v === 'number' ? Math.round(v * 10) / 10 : v))}\n`);
    } catch (err) {
      runs.get(target.label).push({ short: err.message.split('\n')[0] });
    } finally {
      await server?.stop();
    }
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const results = {};
for (const [label, rounds] of runs) {
  const ok = rounds.filter((r) => r.short === undefined);
  results[label] = {
    rounds,
    cpuUsPerConnection: ok.length === 0 ? null : Math.round(median(ok.map((r) => r.cpuUsPerConnection)) * 10) / 10
  };
}
const ws = results['plain ws'].cpuUsPerConnection;
console.log(`connect, welcome and close: CPU per connection, median of ${values.rounds} (${SIZE} connections, ${WORKERS} workers)`);
for (const [label, { cpuUsPerConnection }] of Object.entries(results)) {
  console.log(`  ${label.padEnd(32)} ${cpuUsPerConnection === null ? 'short' : `${cpuUsPerConnection} µs${ws ? ` (${(cpuUsPerConnection / ws).toFixed(2)}× plain ws)` : ''}`}`);
}
const ip = results['gateway --balance ip'].cpuUsPerConnection;
const reuseport = results['gateway --balance reuseport'].cpuUsPerConnection;
if (ip && reuseport) console.log(`  --balance ip: ${(ip / reuseport).toFixed(2)}× reuseport`);
writeFileSync(values.out, JSON.stringify({ connections: SIZE, workers: Number(WORKERS), results }, null, 2) + '\n');
console.log(`written to ${values.out}`);
