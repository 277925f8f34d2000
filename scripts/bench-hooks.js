#!/usr/bin/env node
// The connect hook's figures, in one run:
//   1. connects/s and the gateway's CPU per connect (primary and workers,
//      from /proc) under --auth none, --auth jwt (HS256, an auth frame) and
//      --auth hook (a local backend answering at once): each connect opens a
//      WebSocket, waits until it is admitted (welcome; under jwt, the auth
//      ack) and drops it, `--concurrency` at a time;
//   2. the storm: `--storm` WebSockets opened at once against a backend that
//      answers in 200 ms, --hook-concurrency 16: the total time, the
//      backend's request count (one per connection: the gateway retries
//      none) and the most requests in flight at once per worker (each of the
//      gateway's pooled sockets is mapped to its worker with `ss -p`).
// The backend runs in a process of its own (./bench/hook-backend.js).
// Loopback only; bounded in connections and time.
//
// The modes take turns, `--rounds` times, and each figure is the median of its
// rounds: on a shared machine, a neighbour's burst then hits every mode alike.
//
//   node scripts/bench-hooks.js [--connects 3000] [--concurrency 50] [--rounds 3] [--storm 2000] [--json FILE]
import '../lib/runtime/node-version.js'; // first: an unsupported Node stops here, with one line
import { fork, execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { scriptArgs } from './harness/args.js';
import WebSocket from 'ws';
import { SignJWT } from 'jose';
import { startGateway } from './harness/gateway.js';
import { sampleTree, cpuBetween } from './bench/proc-sampler.js';
import { quantile } from '../lib/loadgen/quantile.js';

const MAX_CONNECTS = 20000;
const MAX_STORM = 5000; // sockets held by this process at once: well under its 20,000 files
const WARMUP = 300;
const WORKERS = 2;
const STORM_CONCURRENCY = 16;
const STORM_ANSWER_MS = 200;
const SECRET = 'bench-hooks-secret-of-at-least-32-characters';
const BACKEND = fileURLToPath(new URL('./bench/hook-backend.js', import.meta.url));
const DEFAULT_JSON = fileURLToPath(new URL('./results/hooks.json', import.meta.url));

const { values } = scriptArgs({
  usage: '[--connects 3000] [--concurrency 50] [--rounds 3] [--storm 2000] [--json FILE]',
  options: {
    connects: { type: 'string', default: '3000' },
    concurrency: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '3' },
    storm: { type: 'string', default: '2000' },
    json: { type: 'string', default: DEFAULT_JSON }
  }
});
const connects = Number(values.connects);
const concurrency = Number(values.concurrency);
const stormSize = Number(values.storm);
const rounds = Number(values.rounds);
if (!(Number.isInteger(rounds) && rounds > 0 && rounds <= 10)) throw new Error('--rounds must be 1..10');
if (!(Number.isInteger(connects) && connects > 0 && connects <= MAX_CONNECTS)) throw new Error(`--connects must be 1..${MAX_CONNECTS}`);
if (!(Number.isInteger(concurrency) && concurrency > 0 && concurrency <= 1000)) throw new Error('--concurrency must be 1..1000');
if (!(Number.isInteger(stormSize) && stormSize > 0 && stormSize <= MAX_STORM)) throw new Error(`--storm must be 1..${MAX_STORM}`);

const token = await new SignJWT({ sub: 'bench' }).setProtectedHeader({ alg: 'HS256' }).setExpirationTime('1h').sign(new TextEncoder().encode(SECRET));
const MODES = ['none', 'jwt', 'hook'];
const results = { workers: WORKERS, connects, concurrency, rounds, modes: {}, storm: undefined };

const fast = await startBackend(0);
try {
  const runs = Object.fromEntries(MODES.map((mode) => [mode, []]));
  for (let round = 0; round < rounds; round++) for (const mode of MODES) runs[mode].push(await connectRate(mode, fast));
  for (const mode of MODES) {
    const r = (results.modes[mode] = medians(runs[mode]));
    console.log(`--auth ${mode}: ${r.connectsPerSec} connects/s, gateway CPU ${r.cpuUsPerConnect} µs per connect` + (r.backendRequests === undefined ? '' : `, backend requests ${r.backendRequests}`));
  }
} finally {
  fast.stop();
}
const slow = await startBackend(STORM_ANSWER_MS);
try {
  const s = (results.storm = await storm(slow));
  console.log(
    `storm: ${s.connections} connections at once, backend ${STORM_ANSWER_MS} ms, --hook-concurrency ${STORM_CONCURRENCY}, ${WORKERS} workers: ` +
      `all admitted in ${s.totalMs} ms (implied at least ${s.impliedMs} ms); backend requests ${s.backendRequests}; ` +
      `in flight at most ${s.maxInFlight} in all, per worker ${JSON.stringify(s.maxInFlightPerWorker)}; ${s.backendSockets} pooled sockets`
  );
} finally {
  slow.stop();
}
writeFileSync(values.json, JSON.stringify(results, null, 2) + '\n');
console.log(`written to ${values.json}`);

/** Connects per second and the gateway's CPU per connect under one --auth mode. */
async function connectRate(mode, backend) {
  const auth = { none: [], jwt: ['--auth', 'jwt', '--jwt-secret', SECRET], hook: ['--auth', 'hook', '--connect-hook', `${backend.url}/connect`] }[mode];
  const gw = await startGateway([...auth, '--workers', String(WORKERS), '--balance', 'even']);
  try {
    await connectMany(gw.url, mode, WARMUP);
    backend.send('reset');
    const before = sampleTree(gw.proc.pid);
    const started = performance.now();
    await connectMany(gw.url, mode, connects);
    const ms = performance.now() - started;
    const cpu = cpuBetween(before, sampleTree(gw.proc.pid), gw.proc.pid);
    const report = mode === 'hook' ? await backend.report() : undefined;
    return {
      connectsPerSec: Math.round((connects * 1000) / ms),
      cpuUsPerConnect: Math.round(cpu.totalUs / connects),
      workersCpuUsPerConnect: Math.round(cpu.workersUs / connects),
      backendRequests: report?.requests
    };
  } finally {
    await gw.stop();
  }
}

/** Each figure's median over the rounds, with every round's figures kept. */
function medians(list) {
  const out = { rounds: list };
  for (const key of Object.keys(list[0])) {
    if (list[0][key] === undefined) continue;
    out[key] = quantile(list.map((r) => r[key]), 0.5);
  }
  return out;
}

/** `n` connects, `concurrency` at a time. */
async function connectMany(url, mode, n) {
  let next = 0;
  const lane = async () => {
    while (next < n) {
      next++;
      await connectOnce(url, mode);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, lane));
}

/** Opens a WebSocket, resolves once the gateway admitted it (welcome; under jwt the auth ack), and drops it. */
function connectOnce(url, mode) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    let admitted = false;
    ws.on('message', (data) => {
      const frame = JSON.parse(data);
      if (frame.type === 'welcome' && mode === 'jwt') return ws.send(JSON.stringify({ type: 'auth', token, id: 1 }));
      if (frame.type === 'welcome' || (frame.type === 'ack' && frame.id === 1)) {
        admitted = true;
        ws.terminate();
        resolve();
      }
    });
    ws.on('error', () => {});
    ws.on('close', (code) => admitted || reject(new Error(`--auth ${mode}: closed with ${code} before being admitted`)));
  });
}

/** `stormSize` WebSockets opened at once against the slow backend. */
async function storm(backend) {
  const gw = await startGateway([
    '--auth', 'hook', '--connect-hook', `${backend.url}/connect`, '--hook-concurrency', String(STORM_CONCURRENCY),
    '--workers', String(WORKERS), '--balance', 'even'
  ]);
  const sockets = [];
  try {
    const started = performance.now();
    const welcomes = await Promise.all(
      Array.from({ length: stormSize }, () => {
        const ws = new WebSocket(gw.url);
        sockets.push(ws);
        ws.on('error', () => {});
        return new Promise((resolve, reject) => {
          ws.on('message', (data) => resolve(JSON.parse(data)));
          ws.on('close', (code) => reject(new Error(`storm: closed with ${code} before the welcome`)));
        });
      })
    );
    const totalMs = Math.round(performance.now() - started);
    const report = await backend.report();
    const perWorker = welcomes.reduce((counts, w) => counts.set(w.worker, (counts.get(w.worker) ?? 0) + 1), new Map());
    return {
      connections: stormSize,
      admitted: welcomes.filter((w) => w.type === 'welcome').length,
      totalMs,
      impliedMs: Math.ceil(Math.max(...perWorker.values()) / STORM_CONCURRENCY) * STORM_ANSWER_MS,
      backendRequests: report.requests,
      backendSockets: report.sockets,
      maxInFlight: report.maxInFlight,
      maxInFlightPerWorker: inFlightPerWorker(report.events, backend.port)
    };
  } finally {
    for (const ws of sockets) ws.terminate();
    await gw.stop();
  }
}

/**
 * The most requests in flight at once per gateway process: the backend's
 * events by remote port, each port mapped to the process that holds the
 * socket (the pool keeps them open, so `ss` still sees them).
 */
function inFlightPerWorker(events, port) {
  const owner = new Map(); // local port -> pid
  const lines = execFileSync('ss', ['-tnpH', 'state', 'established', `( dport = :${port} )`], { encoding: 'utf8' }).split('\n');
  for (const line of lines) {
    const local = /\S+:(\d+)\s+\S+:\d+/.exec(line);
    const pid = /pid=(\d+)/.exec(line);
    if (local && pid) owner.set(Number(local[1]), Number(pid[1]));
  }
  const current = new Map();
  const max = {};
  for (const [, remotePort, delta] of events) {
    const pid = owner.get(remotePort) ?? 'unmapped';
    const n = (current.get(pid) ?? 0) + delta;
    current.set(pid, n);
    max[pid] = Math.max(max[pid] ?? 0, n);
  }
  return max;
}

/** The backend process (./bench/hook-backend.js): {port, url, send(msg), report(), stop()}. */
async function startBackend(delayMs) {
  const proc = fork(BACKEND, ['--delay-ms', String(delayMs)], { stdio: 'inherit' });
  const [{ port }] = await once(proc, 'message');
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    send: (msg) => proc.send(msg),
    async report() {
      proc.send('report');
      return (await once(proc, 'message'))[0];
    },
    stop: () => proc.disconnect()
  };
}
