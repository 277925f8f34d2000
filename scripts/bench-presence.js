#!/usr/bin/env node
// Presence figures (README, "Presence and join/leave"), loopback only, bounded in
// clients and time; starts and stops its own gateways and redis-server:
// - 10,000 clients in one presence channel over two workers: presence_stats
//   latency, the presence answer's size and time (--presence-max-clients
//   10000), memory per presence entry (the embedded engine's table, measured
//   in this process with --expose-gc; Redis: MEMORY USAGE of the channel's keys);
// - a reconnect storm of 10,000 clients in a presence channel without
//   joinLeave (the control: what the churn alone costs the workers), then
// - a reconnect storm of 10,000 clients in one joinLeave channel: its
//   duration, presence_diff frames (and bytes) per client, the workers' worst
//   event-loop delay, and whether the presence list and three live member
//   lists (lib/client members(): a presence read plus diffs) are right.
// The clients live in forked agents (scripts/bench/presence-agent.js), so no
// process holds 20,000 open files.
//
//   npm run bench:presence -- [--clients 10000] [--agents 2] [--engines memory,redis] [--json scripts/results/presence.json]
import '../lib/runtime/node-version.js';
import { fork } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { scriptArgs } from './harness/args.js';
import WebSocket from 'ws';
import { connect } from '../lib/client/index.js';
import { PresenceTable } from '../lib/engines/presence-table.js';
import { startGateway, eventually } from './harness/gateway.js';
import { RedisServer } from './harness/redis.js';
import { askChild, track } from './bench/children.js';
import { welcomed } from './bench/ws-clients.js';
import { configFile } from '../test/helpers/api.js';
import { quantile } from '../lib/loadgen/quantile.js';

const MAX_CLIENTS = 20000;
const KEY = 'bench-key';
let nextId = 1; // of the probe's frames
const NAMESPACES = { namespaces: [{ name: 'big', presence: true }, { name: 'room', presence: true, joinLeave: true }, { name: 'plain' }] };

const { values } = scriptArgs({
  usage: '[--clients 10000] [--agents 2] [--engines memory,redis] [--json scripts/results/presence.json]',
  options: {
    clients: { type: 'string', default: '10000' },
    agents: { type: 'string', default: '2' },
    engines: { type: 'string', default: 'memory,redis' },
    json: { type: 'string', default: 'scripts/results/presence.json' }
  }
});
const clients = Number(values.clients);
const agents = Number(values.agents);
if (!(Number.isInteger(clients) && clients > 0 && clients <= MAX_CLIENTS)) throw new Error(`--clients must be 1..${MAX_CLIENTS}`);
if (!(Number.isInteger(agents) && agents > 0 && clients / agents <= 10000)) throw new Error('--agents: at most 10,000 clients each');
if (typeof globalThis.gc !== 'function') throw new Error('run with node --expose-gc (npm run bench:presence does)');

const results = { clients, agents, at: new Date().toISOString(), embeddedEntryBytes: tableEntryBytes(clients), workerBytesPerSubscription: await workerCost() };
console.log(`memory per presence entry, embedded engine's table: ${results.embeddedEntryBytes} bytes`);
console.log(`worker heap per subscription: ${results.workerBytesPerSubscription.plain} bytes without presence, ${results.workerBytesPerSubscription.presence} with`);
for (const engine of values.engines.split(',')) results[engine] = await runEngine(engine);
writeFileSync(values.json, `${JSON.stringify(results, null, 2)}\n`);
console.log(`written to ${values.json}`);
process.exit(0);

async function runEngine(engine) {
  const redis = engine === 'redis' ? await RedisServer.start() : undefined;
  // --max-publish-rate: the probe's reads spend publish tokens
  const args = ['--workers', '2', '--config', configFile(NAMESPACES), '--api-key', KEY, '--presence-max-clients', String(MAX_CLIENTS), '--max-publish-rate', '100000'];
  if (redis) args.push('--engine', 'redis', '--redis-url', redis.url);
  const gw = await startGateway(args, { timeout: 60000 });
  try {
    const out = { room: await bigRoom(gw, redis) };
    out.control = await control(gw);
    out.storm = await storm(gw);
    print(engine, out);
    return out;
  } finally {
    await gw.stop();
    await redis?.remove();
  }
}

/**
 * A worker's heap per subscribed connection, the channel in a namespace
 * without presence and in one with it: the floor of its heap (a full GC every
 * 250 ms) with the clients held, less the floor before they came.
 */
async function workerCost() {
  const gw = await startGateway(['--workers', '1', '--config', configFile(NAMESPACES), '--gc-interval', '250']);
  const floor = async () => {
    let least = Infinity;
    for (let i = 0; i < 4; i++) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const stats = await (await fetch(`http://127.0.0.1:${gw.metricsPort}/stats`)).json().catch(() => undefined);
      least = Math.min(least, stats?.workers[0]?.heapUsedBytes ?? Infinity);
    }
    return least;
  };
  const perClient = async (channel) => {
    const before = await floor();
    const group = await openAgents(gw.url, channel);
    const held = await floor();
    group.stop();
    await eventually(async () => (await gw.metric('gateway_connections')) === 0, { what: 'the clients gone', timeout: 60000 });
    return Math.round((held - before) / clients);
  };
  try {
    return { plain: await perClient('plain:1'), presence: await perClient('big:1') };
  } finally {
    await gw.stop();
  }
}

/** 10,000 clients in big:1 (presence, no join/leave): reads timed from one more client, subscribed too (a read needs a subscription). */
async function bigRoom(gw, redis) {
  const group = await openAgents(gw.url, 'big:1');
  const probe = await welcomed(gw.url);
  await ask(probe, { type: 'subscribe', channel: 'big:1' });
  const present = clients + 1;
  await eventually(async () => (await ask(probe, { type: 'presence_stats', channel: 'big:1' })).frame.clients === present, { what: 'all present', timeout: 60000 });
  const stats = [];
  for (let i = 0; i < 100; i++) stats.push((await ask(probe, { type: 'presence_stats', channel: 'big:1' })).ms);
  const lists = [];
  let bytes = 0;
  for (let i = 0; i < 20; i++) {
    const { ms, frame, size } = await ask(probe, { type: 'presence', channel: 'big:1' });
    if (Object.keys(frame.clients ?? {}).length !== present) throw new Error(`presence answered ${JSON.stringify(frame).slice(0, 200)}`);
    lists.push(ms);
    bytes = size;
  }
  const room = { presenceStatsMs: summary(stats), presenceMs: summary(lists), presenceBytes: bytes };
  if (redis) {
    let used = 0;
    for (const key of ['gw:{big:1}:presence', 'gw:{big:1}:presence:exp', 'gw:{big:1}:presence:users']) used += Number(await redis.command('MEMORY', 'USAGE', key, 'SAMPLES', '0')) || 0;
    room.redisEntryBytes = Math.round(used / clients);
  }
  probe.terminate();
  group.stop();
  await eventually(async () => (await gw.metric('gateway_presence_clients')) === 0, { what: 'the room emptied', timeout: 60000 });
  return room;
}

/**
 * The same storm in big:storm (presence without joinLeave): what dropping and
 * reconnecting 10,000 clients costs the workers with no diffs to send, so the
 * storm's worst delay can be told apart from the diffs'.
 */
async function control(gw) {
  const group = await openAgents(gw.url, 'big:storm');
  await new Promise((resolve) => setTimeout(resolve, 3000));
  const delay = worstDelay(gw);
  const { seconds } = await group.storm();
  await new Promise((resolve) => setTimeout(resolve, 2000));
  const out = { stormSeconds: round(seconds), worstWorkerEventLoopDelayMs: round(delay.stop()) };
  group.stop();
  await eventually(async () => (await gw.metric('gateway_presence_clients')) === 0, { what: 'the room emptied', timeout: 60000 });
  return out;
}

/** The workers' worst event-loop delay from now until stop(), sampled from /stats. */
function worstDelay(gw) {
  let worst = 0;
  const sampler = setInterval(async () => {
    const stats = await (await fetch(`http://127.0.0.1:${gw.metricsPort}/stats`)).json().catch(() => undefined);
    for (const w of stats?.workers ?? []) worst = Math.max(worst, w.eventLoopDelayMs.max);
  }, 500);
  return {
    stop() {
      clearInterval(sampler);
      return worst;
    }
  };
}

/** 10,000 clients in room:storm (joinLeave), all dropped at once and reconnected. */
async function storm(gw) {
  const group = await openAgents(gw.url, 'room:storm');
  const watchers = await Promise.all([1, 2, 3].map(() => memberList(gw.url, 'room:storm')));
  await new Promise((resolve) => setTimeout(resolve, 3000)); // the ramp's diffs out of the way
  await group.counts();
  const sent = await gw.metric('gateway_join_leave_sent_total');
  const delay = worstDelay(gw);
  const { ids, seconds } = await group.storm();
  await new Promise((resolve) => setTimeout(resolve, 2000));
  const worstDelayMs = delay.stop();
  const frames = await group.counts();
  const truth = new Set([...ids, ...watchers.map((w) => w.client.welcome.connectionId)]);
  const listed = Object.keys((await apiCall(gw, 'presence', { channel: 'room:storm' })).clients);
  const exact = listed.length === truth.size && listed.every((id) => truth.has(id));
  const started = Date.now();
  const right = () => watchers.every((w) => w.list.members.size === truth.size && [...w.list.members.keys()].every((id) => truth.has(id)));
  const converged = await eventually(right, { what: 'the member lists converged', timeout: 60000, interval: 100 }).catch(() => false);
  const out = {
    stormSeconds: round(seconds),
    diffsPerClient: round(frames.diffs / clients),
    diffBytesPerClient: Math.round(frames.bytes / clients),
    diffsSent: (await gw.metric('gateway_join_leave_sent_total')) - sent,
    worstWorkerEventLoopDelayMs: round(worstDelayMs),
    presenceExact: exact,
    memberListsConverged: converged,
    memberListsConvergedMs: converged ? Date.now() - started : undefined
  };
  for (const w of watchers) w.client.close();
  group.stop();
  return out;
}

/** Forks the agents and opens `clients` clients among them on `channel`. */
async function openAgents(url, channel) {
  const procs = Array.from({ length: agents }, () => track(fork(new URL('./bench/presence-agent.js', import.meta.url), { stdio: 'inherit' })));
  const askAll = (message) => Promise.all(procs.map((proc, i) => askChild(proc, typeof message === 'function' ? message(i) : message)));
  const share = clients / agents;
  await askAll((i) => ({ cmd: 'open', url, channel, count: Math.floor(share * (i + 1)) - Math.floor(share * i), first: i + 1 }));
  return {
    counts: async () => (await askAll({ cmd: 'counts' })).reduce((a, b) => ({ diffs: a.diffs + b.diffs, bytes: a.bytes + b.bytes })),
    storm: async () => {
      const answers = await askAll({ cmd: 'storm' });
      return { ids: answers.flatMap((a) => a.ids), seconds: Math.max(...answers.map((a) => a.seconds)) };
    },
    stop: () => procs.forEach((proc) => proc.kill('SIGKILL'))
  };
}

/** A lib/client client keeping a live member list. */
async function memberList(url, channel) {
  const client = connect(url, { WebSocket });
  const list = client.members(channel);
  await list.ready;
  return { client, list };
}

/** Sends a frame and times its answer. */
function ask(ws, frame) {
  const id = nextId++;
  const started = performance.now();
  return new Promise((resolve) => {
    const onMessage = (data) => {
      const answer = JSON.parse(data);
      if (answer.id !== id) return;
      ws.off('message', onMessage);
      resolve({ ms: performance.now() - started, frame: answer, size: data.length });
    };
    ws.on('message', onMessage);
    ws.send(JSON.stringify({ ...frame, id }));
  });
}

async function apiCall(gw, method, params) {
  const res = await fetch(`http://127.0.0.1:${gw.port}/api/${method}`, { method: 'POST', headers: { Authorization: `Bearer ${KEY}` }, body: JSON.stringify(params) });
  const body = await res.json();
  if (res.status !== 200) throw new Error(`${method}: ${res.status} ${JSON.stringify(body)}`);
  return body.result;
}

/** Bytes per entry of the table the embedded engine keeps in the primary (ids, users and info as the workers send them). */
function tableEntryBytes(n) {
  const routes = [{}, {}];
  const make = () => {
    const table = new PresenceTable();
    for (let i = 0; i < n; i++) {
      const member = JSON.parse(JSON.stringify({ user: `user-${i}`, info: { name: `User ${i}` } })); // a fresh value, as IPC gives it
      table.add('room:1', JSON.parse(JSON.stringify(`${1 + (i % 2)}-9f3a1c07-${i.toString(36)}`)), routes[i % 2], member);
    }
    return table;
  };
  globalThis.gc();
  const before = process.memoryUsage().heapUsed;
  const table = make();
  globalThis.gc();
  const bytes = (process.memoryUsage().heapUsed - before) / n;
  if (table.size !== n) throw new Error('table');
  return Math.round(bytes);
}

function summary(samples) {
  return { p50: round(quantile(samples, 0.5)), p99: round(quantile(samples, 0.99)), max: round(Math.max(...samples)) };
}

function round(x) {
  return Math.round(x * 10) / 10;
}

function print(engine, { room, control: c, storm: s }) {
  console.log(`\n${engine}: ${clients} clients over two workers`);
  console.log(`  presence_stats  p50 ${room.presenceStatsMs.p50} ms  p99 ${room.presenceStatsMs.p99} ms  max ${room.presenceStatsMs.max} ms`);
  console.log(`  presence        p50 ${room.presenceMs.p50} ms  max ${room.presenceMs.max} ms, ${room.presenceBytes} bytes`);
  if (room.redisEntryBytes !== undefined) console.log(`  Redis memory per presence entry: ${room.redisEntryBytes} bytes`);
  console.log(`  reconnect storm: ${s.stormSeconds} s, ${s.diffsPerClient} presence_diff frames per client (${s.diffBytesPerClient} bytes; ${s.diffsSent} sent)`);
  console.log(`  the same storm without joinLeave: ${c.stormSeconds} s, worst worker event-loop delay ${c.worstWorkerEventLoopDelayMs} ms`);
  console.log(`  worst worker event-loop delay ${s.worstWorkerEventLoopDelayMs} ms; presence exact: ${s.presenceExact}; member lists converged: ${s.memberListsConverged} (${s.memberListsConvergedMs} ms)`);
}
