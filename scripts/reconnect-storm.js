#!/usr/bin/env node
// Reconnect storm: N clients of lib/client on one worker, that worker
// SIGKILLed, and how long each takes to be back (welcome received and
// resubscribed): the spread that full-jitter backoff gives a crowd that lost
// its connections at the same instant. Loopback only; bounded in clients and
// time; starts and stops its own gateway (through the tests' helper, which
// already knows how to run one and read its logs).
//
//   node scripts/reconnect-storm.js [--clients 1000] [--backoff-base 1000] [--backoff-cap 30000] [--json FILE]
import '../lib/runtime/node-version.js'; // first: an unsupported Node stops here, with one line
import { writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { scriptArgs } from './harness/args.js';
import WebSocket from 'ws';
import { connect, State } from '../lib/client/index.js';
import { Histogram } from '../lib/loadgen/histogram.js';
import { startGateway, eventually } from './harness/gateway.js';

const MAX_CLIENTS = 5000;
const BATCH = 100; // clients dialled at once while setting up
const BUCKET_MS = 100; // width of the reconnect-time histogram's bars

const { values } = scriptArgs({
  usage: '[--clients 1000] [--backoff-base 1000] [--backoff-cap 30000] [--json FILE]',
  options: {
    clients: { type: 'string', default: '1000' },
    'backoff-base': { type: 'string', default: '1000' },
    'backoff-cap': { type: 'string', default: '30000' },
    json: { type: 'string' }
  }
});
const count = Number(values.clients);
if (!(Number.isInteger(count) && count > 0 && count <= MAX_CLIENTS)) throw new Error(`--clients must be 1..${MAX_CLIENTS}`);
const options = { WebSocket, backoffBase: Number(values['backoff-base']), backoffCap: Number(values['backoff-cap']) };

const gw = await startGateway();
const runs = [];
try {
  for (let i = 0; i < count; i += BATCH) {
    const batch = Array.from({ length: Math.min(BATCH, count - i) }, () => watch(connect(gw.url, options)));
    await Promise.all(batch.map((run) => run.client.subscribe('storm', () => run.received++)));
    runs.push(...batch);
  }
  // From one address, --balance ip puts every client on the same worker.
  const workers = new Set(runs.map((run) => run.client.welcome.worker));
  if (workers.size !== 1) throw new Error(`clients landed on workers ${[...workers]}, expected one`);
  const [worker] = workers;
  const pid = gw.workerPid(worker);

  const killedAt = performance.now();
  for (const run of runs) run.killedAt = killedAt;
  process.kill(pid, 'SIGKILL');
  await eventually(() => runs.every((run) => run.reopenedAt !== undefined), {
    what: 'every client back',
    timeout: 2 * options.backoffCap + 30000,
    interval: 100
  });

  // Back means resubscribed too: one publish after the storm reaches them all.
  const before = runs.map((run) => run.received);
  await eventually(
    async () => {
      await runs[0].client.publish('storm', 'after');
      return runs.every((run, i) => run.received > before[i]);
    },
    { what: 'every client resubscribed', timeout: 30000, interval: 200 }
  );

  const report = summarise(runs, worker, options);
  print(report);
  if (values.json) writeFileSync(values.json, JSON.stringify(report, null, 2) + '\n');
} finally {
  for (const run of runs) run.client.close();
  await gw.stop();
}

function watch(client) {
  const run = { client, received: 0, killedAt: undefined, closedAt: undefined, reopenedAt: undefined, firstDelay: undefined, attempts: 0 };
  client.on('state', (state, detail) => {
    if (run.killedAt === undefined) return;
    const at = performance.now() - run.killedAt;
    if (state === State.RECONNECTING) {
      run.attempts++;
      run.closedAt ??= at;
      run.firstDelay ??= detail.delay;
    } else if (state === State.OPEN) run.reopenedAt ??= at;
  });
  return run;
}

function summarise(runs, worker, options) {
  const histogram = (key) => {
    const h = new Histogram();
    for (const run of runs) h.record(run[key]);
    return { p50: Math.round(h.quantile(0.5)), p90: Math.round(h.quantile(0.9)), p99: Math.round(h.quantile(0.99)), max: h.max };
  };
  const bars = [];
  for (const run of runs) {
    const i = Math.floor(run.reopenedAt / BUCKET_MS);
    bars[i] = (bars[i] ?? 0) + 1;
  }
  const attempts = {};
  for (const run of runs) attempts[run.attempts] = (attempts[run.attempts] ?? 0) + 1;
  return {
    clients: runs.length,
    killedWorker: worker,
    backoff: { base: options.backoffBase, cap: options.backoffCap },
    closeSeenMs: histogram('closedAt'),
    firstDelayMs: histogram('firstDelay'),
    reconnectMs: histogram('reopenedAt'),
    attempts,
    landedOn: countBy(runs.map((run) => run.client.welcome.worker)),
    perBucket: { widthMs: BUCKET_MS, counts: Array.from(bars, (n) => n ?? 0) }
  };
}

function countBy(list) {
  const counts = {};
  for (const item of list) counts[item] = (counts[item] ?? 0) + 1;
  return counts;
}

function print(r) {
  const line = (name, h) => `  ${name.padEnd(30)} p50 ${h.p50} ms   p90 ${h.p90} ms   p99 ${h.p99} ms   max ${h.max} ms`;
  console.log(`${r.clients} clients on worker ${r.killedWorker}, SIGKILLed; backoff base ${r.backoff.base} ms, cap ${r.backoff.cap} ms`);
  console.log(line('close seen after the kill', r.closeSeenMs));
  console.log(line('first drawn delay', r.firstDelayMs));
  console.log(line('back (welcome) after the kill', r.reconnectMs));
  console.log(`  attempts needed: ${JSON.stringify(r.attempts)}   landed on workers: ${JSON.stringify(r.landedOn)}`);
  console.log(`  reconnects per ${r.perBucket.widthMs} ms after the kill:`);
  const peak = Math.max(...r.perBucket.counts);
  r.perBucket.counts.forEach((n, i) => {
    const from = i * r.perBucket.widthMs;
    console.log(`  ${String(from).padStart(6)}-${String(from + r.perBucket.widthMs).padEnd(6)} ${String(n).padStart(5)} ${'#'.repeat(Math.round((n / peak) * 50))}`);
  });
}
