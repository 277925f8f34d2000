#!/usr/bin/env node
// `npm run bench:idle-held`: what the gateway spends holding idle subscribed
// connections between two pings. Each client subscribes, then nothing
// happens but the keepalive; once every client has had its first ping, the
// CPU of every process (the scheduler's count, to the nanosecond) and the
// wake-ups of each event loop are read over a window in which no ping comes
// (the clients count them: a window with one says so). This tree's gateway
// and, with --old, an older checkout's, in turn, each round.
import '../lib/runtime/node-version.js'; // first: an unsupported Node stops here, with one line
import path from 'node:path';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import WebSocket from 'ws';
import { scriptArgs } from './harness/args.js';
import { Server } from './bench/servers.js';
import { treeOf, schedOf } from './bench/proc-sampler.js';

const { values, usageError } = scriptArgs({
  usage: '[options]',
  about: 'CPU and event-loop wake-ups per second of the gateway holding idle subscribed connections between pings',
  options: {
    old: { type: 'string', describe: 'an older checkout whose gateway is measured beside this one' },
    connections: { type: 'string', default: '2000', describe: 'connections held' },
    workers: { type: 'string', default: '2', describe: 'gateway workers' },
    balance: { type: 'string', default: 'ip', describe: "the gateway's --balance" },
    'ping-interval': { type: 'string', default: '60000', describe: "the gateway's --ping-interval, ms" },
    window: { type: 'string', default: '20', describe: 'seconds measured' },
    rounds: { type: 'string', default: '1', describe: 'rounds (each server once a round)' },
    out: { type: 'string', default: fileURLToPath(new URL('results/idle-held.json', import.meta.url)), describe: 'JSON results' }
  }
});
const SIZE = Number(values.connections);
const WINDOW_S = Number(values.window);
const PING_MS = Number(values['ping-interval']);
for (const name of ['connections', 'workers', 'window', 'rounds', 'ping-interval']) {
  if (!(Number(values[name]) > 0)) usageError(`--${name} must be a positive number, got ${values[name]}`);
}
const SOURCES = 16; // source addresses 127.0.0.1..16, so --balance ip spreads the clients
const CHANNELS = 100;
const CONCURRENCY = 100;
const SETTLE_MS = 1000; // after the first round of pings: their pongs are read

const targets = [{ label: 'gateway', script: undefined }];
if (values.old !== undefined) targets.unshift({ label: 'old gateway', script: path.resolve(values.old, 'bin/gateway.js') });

const runs = new Map(targets.map((t) => [t.label, []]));
for (let round = 1; round <= Number(values.rounds); round++) {
  for (const target of targets) {
    const figures = await measure(target).catch((err) => ({ short: err.message.split('\n')[0] }));
    runs.get(target.label).push(figures);
    process.stderr.write(`bench:idle-held: round ${round}, ${target.label}: ${JSON.stringify(figures)}\n`);
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const results = {};
for (const [label, rounds] of runs) {
  const ok = rounds.filter((r) => r.short === undefined);
  results[label] = { rounds, cpuMsPerSec: ok.length === 0 ? null : median(ok.map((r) => r.cpuMsPerSec)), wakeupsPerSec: ok.length === 0 ? null : median(ok.map((r) => r.wakeupsPerSec)) };
}
console.log(`${SIZE} idle subscribed connections, ${values.workers} workers, --balance ${values.balance}, ping interval ${PING_MS} ms: ${WINDOW_S} s without a ping, median of ${values.rounds}`);
for (const [label, { rounds, cpuMsPerSec, wakeupsPerSec }] of Object.entries(results)) {
  const last = rounds.findLast((r) => r.short === undefined);
  const each = last === undefined ? '' : ` (${last.processes.map((p) => `${p.role} ${p.cpuMsPerSec}`).join(', ')})`;
  console.log(`  ${label.padEnd(12)} ${cpuMsPerSec === null ? `short: ${rounds.at(-1).short}` : `${cpuMsPerSec} ms of CPU a second${each}, ${wakeupsPerSec} event-loop wake-ups a second`}`);
}
writeFileSync(values.out, JSON.stringify({ connections: SIZE, workers: Number(values.workers), balance: values.balance, pingIntervalMs: PING_MS, windowS: WINDOW_S, results }, null, 2) + '\n');
console.log(`written to ${values.out}`);
process.exit(0);

/** One server: started, filled, measured over the window, stopped. */
async function measure({ script }) {
  const server = await Server.start('gateway', ['--workers', values.workers, '--balance', values.balance, '--ping-interval', String(PING_MS)], [], script);
  const clients = [];
  try {
    const pinged = new Set();
    let pings = 0;
    let next = 0;
    const open = async () => {
      while (next < SIZE) {
        const i = next++;
        const ws = await subscribed(server.url, `idle-${i % CHANNELS}`, `127.0.0.${(i % SOURCES) + 1}`);
        ws.on('ping', () => {
          pings++;
          pinged.add(ws);
        });
        clients.push(ws);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, open));
    const deadline = performance.now() + PING_MS + 30000;
    while (pinged.size < SIZE) {
      if (performance.now() > deadline) throw new Error(`only ${pinged.size} of ${SIZE} clients pinged within the interval`);
      await sleep(200);
    }
    await sleep(SETTLE_MS);
    const pids = treeOf(server.pid);
    const before = pids.map(schedOf);
    const pingsBefore = pings;
    const started = performance.now();
    await sleep(WINDOW_S * 1000);
    const after = pids.map(schedOf);
    const seconds = (performance.now() - started) / 1000;
    const round1 = (x) => Math.round(x * 10) / 10;
    const processes = pids.map((pid, i) => ({
      role: i === 0 ? 'primary' : `worker ${i}`,
      cpuMsPerSec: round1((after[i].cpuNs - before[i].cpuNs) / 1e6 / seconds),
      wakeupsPerSec: round1((after[i].wakeups - before[i].wakeups) / seconds)
    }));
    const sum = (key) => round1(processes.reduce((total, p) => total + p[key], 0));
    return { cpuMsPerSec: sum('cpuMsPerSec'), wakeupsPerSec: sum('wakeupsPerSec'), pingsInWindow: pings - pingsBefore, processes };
  } finally {
    for (const ws of clients) ws.terminate();
    await server.stop();
  }
}

/** A client once its subscription to `channel` was acknowledged. */
function subscribed(url, channel, localAddress) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { localAddress });
    const fail = (why) => {
      ws.terminate();
      reject(new Error(`client ${localAddress}: ${why}`));
    };
    ws.on('error', (err) => fail(err.message));
    ws.on('close', (code) => fail(`closed ${code}`));
    ws.on('message', (data) => {
      const frame = JSON.parse(data);
      if (frame.type === 'welcome') return ws.send(JSON.stringify({ type: 'subscribe', channel, id: 1 }));
      if (frame.type !== 'ack' || frame.id !== 1) return fail(`answered ${data}`);
      ws.removeAllListeners();
      ws.on('error', () => {});
      resolve(ws);
    });
  });
}
