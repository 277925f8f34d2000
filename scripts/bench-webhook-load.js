#!/usr/bin/env node
// What a huge list of slow webhook targets costs everyone else, loopback
// only, bounded in time. A gateway (2 workers, --balance ip: the primary
// hands every connection over) serves --apps Pusher apps of --targets
// webhook targets each, all pointed at receivers that answer after
// --receiver-delay-ms (./bench/slow-receivers.js, 10 origins), plus one
// app without webhooks. A probe opens --probes connections of that app one
// after another, each until its connection_established: first with the
// hooked apps quiet, then with their channels busy (./bench/occupancy-churn.js:
// --pairs-per-sec subscribe+unsubscribe pairs, each two webhook events for
// every target). Reported: the probe's p50/p99/max, busy ÷ quiet, the
// primary's event-loop delay max over the busy phase (its own metric), and
// the requests the receivers got. --old DIR runs another checkout's gateway
// the same way, side by side (and, since it takes any number of targets, one
// app of apps × targets as well).
//
//   npm run bench:webhook-load -- [--old DIR] [--apps 10] [--targets 100] [--probes 200] [--pairs-per-sec 100] [--receiver-delay-ms 1000] [--json FILE]
import '../lib/runtime/node-version.js';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { scriptArgs } from './harness/args.js';
import { startGateway } from './harness/gateway.js';
import { quantile } from '../lib/loadgen/quantile.js';

const { values } = scriptArgs({
  usage: '[--old DIR] [--apps 10] [--targets 100] [--probes 200] [--pairs-per-sec 100] [--receiver-delay-ms 1000] [--json FILE]',
  options: {
    old: { type: 'string', default: '' },
    apps: { type: 'string', default: '10' },
    targets: { type: 'string', default: '100' },
    probes: { type: 'string', default: '200' },
    'pairs-per-sec': { type: 'string', default: '100' },
    'receiver-delay-ms': { type: 'string', default: '1000' },
    json: { type: 'string', default: 'scripts/results/webhook-load.json' }
  }
});
const [apps, targets, probes] = ['apps', 'targets', 'probes'].map((name) => Number(values[name]));
if (!(apps >= 1 && apps <= 100 && targets >= 1 && targets <= 1000 && probes >= 10 && probes <= 2000)) throw new Error('--apps 1..100, --targets 1..1000, --probes 10..2000');
const SECRET = 'bench-webhook-load-secret-0123456789';
const here = (file) => fileURLToPath(new URL(file, import.meta.url));
const PROBE = { appId: 'probe', key: 'probe-key', secret: SECRET };
const EVENTS = ['channel_occupied', 'channel_vacated'];

const receivers = await child(here('./bench/slow-receivers.js'), ['--delay-ms', values['receiver-delay-ms']]);
const { ports } = await receivers.next();
const runs = [{ label: 'gateway', bin: here('../bin/gateway.js'), shape: [apps, targets] }];
if (values.old !== '') {
  const bin = path.resolve(values.old, 'bin/gateway.js');
  runs.push({ label: 'old gateway', bin, shape: [apps, targets] }, { label: 'old gateway', bin, shape: [1, apps * targets] });
}
const results = [];
try {
  for (const run of runs) results.push(await measure(run));
} finally {
  receivers.proc.kill('SIGTERM');
}
const requests = (await receivers.next().catch(() => ({}))).requests;
const out = { at: new Date().toISOString(), machine: { cpus: os.cpus().length, loadAverage: os.loadavg().map((l) => Math.round(l * 100) / 100) }, options: values, receiverRequests: requests, results };
console.table(results.map(({ label, apps: a, targetsPerApp, quiet, busy, busyOverQuietP99, primaryLoopMaxMs, pairs }) => ({ label, apps: a, targetsPerApp, quietP99: quiet.p99Ms, busyP50: busy.p50Ms, busyP99: busy.p99Ms, busyMax: busy.maxMs, busyOverQuietP99, primaryLoopMaxMs, pairs })));
writeFileSync(values.json, `${JSON.stringify(out, null, 2)}\n`);

/** One gateway run: the probe quiet, then busy. */
async function measure({ label, bin, shape: [appCount, perApp] }) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'webhook-load-'));
  const hooked = Array.from({ length: appCount }, (_, a) => ({
    appId: `hooked-${a}`,
    key: `hooked-key-${a}`,
    secret: SECRET,
    webhooks: Array.from({ length: perApp }, (_, t) => ({ url: `http://127.0.0.1:${ports[t % ports.length]}/app-${a}/target-${t}`, events: EVENTS }))
  }));
  const file = path.join(dir, 'gateway.json');
  writeFileSync(file, JSON.stringify({ pusherApps: [PROBE, ...hooked] }));
  const gw = await startGateway(['--config', file, '--balance', 'ip', '--workers', '2'], { gateway: bin, timeout: 60000 });
  try {
    const url = `ws://127.0.0.1:${gw.port}`;
    const quiet = await probe(url);
    const churn = await child(here('./bench/occupancy-churn.js'), ['--url', url, '--keys', hooked.map((app) => app.key).join(','), '--pairs-per-sec', values['pairs-per-sec']]);
    await churn.next(); // its connections made
    await new Promise((resolve) => setTimeout(resolve, 2000)); // the targets' queues fill
    await primaryLoopMax(gw); // the window starts here
    const busy = await probe(url);
    const primaryLoopMaxMs = await primaryLoopMax(gw);
    churn.proc.kill('SIGTERM');
    const { pairs } = await churn.next();
    return { label, apps: appCount, targetsPerApp: perApp, quiet, busy, busyOverQuietP99: Math.round((busy.p99Ms / quiet.p99Ms) * 100) / 100, primaryLoopMaxMs, pairs };
  } finally {
    await gw.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `probes` connections of the probe app, one after another: ms from open to connection_established. */
async function probe(url) {
  const waits = [];
  for (let i = 0; i < probes; i++) {
    const start = performance.now();
    const ws = new WebSocket(`${url}/app/${PROBE.key}?protocol=7`);
    await new Promise((resolve, reject) => {
      ws.on('message', (data) => String(data).includes('connection_established') && resolve());
      ws.on('error', reject);
    });
    waits.push(performance.now() - start);
    ws.close();
  }
  const ms = (q) => Math.round(quantile(waits, q) * 100) / 100;
  return { p50Ms: ms(0.5), p99Ms: ms(0.99), maxMs: ms(1) };
}

/** The primary's event-loop delay max since the last read (its metric's window resets on each scrape). */
async function primaryLoopMax(gw) {
  const text = await (await fetch(`http://127.0.0.1:${gw.metricsPort}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('gateway_primary_nodejs_eventloop_lag_max_seconds '));
  return line === undefined ? undefined : Math.round(Number(line.split(' ')[1]) * 1e5) / 100;
}

/** A helper process printing JSON lines; next() resolves with the next one. */
async function child(file, args) {
  const proc = spawn(process.execPath, [file, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = readline.createInterface({ input: proc.stdout })[Symbol.asyncIterator]();
  const exited = once(proc, 'exit').then(() => {
    throw new Error(`${path.basename(file)} exited`);
  });
  exited.catch(() => {});
  return { proc, next: async () => JSON.parse((await Promise.race([lines.next(), exited])).value) };
}
