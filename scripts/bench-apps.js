#!/usr/bin/env node
// Many Pusher apps from PostgreSQL, loopback only, bounded in time: a
// throwaway PostgreSQL (scripts/harness/postgres.js) holding --apps apps, and
// the gateway (2 workers, --balance even) started on it. Reports the start-up
// time (spawn to ready) with the table empty and with the apps, the memory
// per app (the workers' and the primary's heap and RSS, full table over
// empty), and the time from an UPDATE's commit to the change holding on
// every worker: a connection of the app held on each worker, the app
// disabled, the last of them closed with 4003; --updates times, the app
// enabled again between them.
//
//   npm run bench:apps -- [--apps 1000] [--updates 20] [--json scripts/results/apps.json]
import '../lib/runtime/node-version.js';
import os from 'node:os';
import { writeFileSync } from 'node:fs';
import { scriptArgs } from './harness/args.js';
import WebSocket from 'ws';
import { startGateway, eventually } from './harness/gateway.js';
import { PostgresServer } from './harness/postgres.js';

const { values } = scriptArgs({
  usage: '[--apps 1000] [--updates 20] [--json scripts/results/apps.json]',
  options: {
    apps: { type: 'string', default: '1000' },
    updates: { type: 'string', default: '20' },
    json: { type: 'string', default: 'scripts/results/apps.json' }
  }
});
const apps = Number(values.apps);
const updates = Number(values.updates);
if (!(apps >= 1 && apps <= 100000 && updates >= 1 && updates <= 200)) throw new Error('--apps 1..100000, --updates 1..200');
const SECRET = 'bench-apps-secret-0123456789';
const MEMORY = ['nodejs_heap_size_used_bytes', 'process_resident_memory_bytes', 'gateway_primary_nodejs_heap_size_used_bytes', 'gateway_primary_process_resident_memory_bytes'];

const pg = await PostgresServer.start();
try {
  const empty = await started(pg);
  await pg.query(
    "INSERT INTO gateway_apps (id, key, secret, client_events, max_connections, webhooks) SELECT 'app-' || i, 'key-' || i, $1, true, 1000, '[]' FROM generate_series(1, $2) AS i",
    [SECRET, apps]
  );
  const full = await started(pg, async (gw) => ({ holds: await timeUpdates(pg, gw) }));
  const perApp = Object.fromEntries(MEMORY.map((name) => [name, Math.round((full.memory[name] - empty.memory[name]) / apps)]));
  const result = {
    at: new Date().toISOString(),
    machine: { cpus: os.cpus().length, loadAverage: os.loadavg().map((l) => Math.round(l * 100) / 100) },
    apps,
    startMs: { empty: empty.startMs, full: full.startMs },
    memoryBytes: { empty: empty.memory, full: full.memory, perApp },
    updateToAllWorkersMs: summary(full.holds)
  };
  console.log(JSON.stringify(result, null, 2));
  writeFileSync(values.json, `${JSON.stringify(result, null, 2)}\n`);
} finally {
  await pg.remove();
}

/** Starts the gateway on the table, measures, runs `more`, stops it. */
async function started(pg, more = async () => ({})) {
  const t0 = performance.now();
  const gw = await startGateway(['--balance', 'even', '--apps-database', pg.url], { timeout: 60000 });
  const startMs = Math.round(performance.now() - t0);
  try {
    await new Promise((resolve) => setTimeout(resolve, 2000)); // the workers settled after their start
    const memory = Object.fromEntries(await Promise.all(MEMORY.map(async (name) => [name, await gw.metric(name)])));
    return { startMs, memory, ...(await more(gw)) };
  } finally {
    await gw.stop();
  }
}

/** The ms from each UPDATE (disable) to the close of the app's connections on both workers. */
async function timeUpdates(pg, gw) {
  const holds = [];
  const id = `app-${Math.ceil(apps / 2)}`;
  const key = `key-${Math.ceil(apps / 2)}`;
  for (let i = 0; i < updates; i++) {
    const held = await onEveryWorker(gw, key);
    const closed = held.map((ws) => new Promise((resolve) => ws.once('close', (code) => resolve([code, performance.now()]))));
    const t0 = performance.now();
    await pg.query('UPDATE gateway_apps SET enabled = false WHERE id = $1', [id]);
    const ends = await Promise.all(closed);
    if (ends.some(([code]) => code !== 4003)) throw new Error(`closed with ${ends.map(([code]) => code)}, not 4003`);
    holds.push(Math.max(...ends.map(([, at]) => at)) - t0);
    await pg.query('UPDATE gateway_apps SET enabled = true WHERE id = $1', [id]);
    await eventually(async () => (await established(gw, key, true)) !== undefined, { what: 'the app enabled again' });
  }
  return holds;
}

/** One established connection of the app on each of the 2 workers (--balance even spreads them). */
async function onEveryWorker(gw, key) {
  const byWorker = new Map();
  for (let tries = 0; byWorker.size < 2 && tries < 40; tries++) {
    const opened = await established(gw, key);
    if (opened === undefined) continue;
    const [ws, worker] = opened;
    if (byWorker.has(worker)) ws.close();
    else byWorker.set(worker, ws);
  }
  if (byWorker.size < 2) throw new Error('no connection on both workers');
  return [...byWorker.values()];
}

/** @returns {Promise<[WebSocket, string]|undefined>} an established connection and its worker's socket_id prefix */
function established(gw, key, closeAfter = false) {
  return new Promise((resolve) => {
    const ws = new WebSocket(`ws://127.0.0.1:${gw.port}/app/${key}?protocol=7`);
    ws.once('message', (data) => {
      const frame = JSON.parse(data.toString());
      if (frame.event !== 'pusher:connection_established') return resolve(undefined);
      if (closeAfter) ws.close();
      resolve([ws, JSON.parse(frame.data).socket_id.split('.')[0]]);
    });
    ws.once('error', () => resolve(undefined));
    ws.once('close', () => resolve(undefined));
  });
}

function summary(list) {
  const sorted = [...list].sort((a, b) => a - b);
  const at = (q) => Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] * 10) / 10;
  return { count: list.length, p50: at(0.5), p90: at(0.9), max: at(1) };
}
