#!/usr/bin/env node
// Coalesced writes, measured: many busy channels per connection (2,000
// connections each subscribed to 50 channels, 10 messages a second on every
// channel, published a turn's worth at a time), on one worker. Per delivered
// message: the gateway's CPU (primary and worker, from /proc/<pid>/stat) and
// the worker's write system calls (write and writev: syscw of
// /proc/<pid>/io). Side by side in one run: --write-delay 0 and 5 on this
// tree and, with --baseline, the same load on another checkout (the tree
// before coalescing: `git worktree add ../old <commit>`). Loopback only,
// bounded in connections and time; the subscribers live in a forked agent
// (scripts/bench/coalesce-agent.js).
//
//   npm run bench:coalesce -- [--baseline ../old] [--connections 2000] [--channels 50] [--rate 10] [--seconds 5] [--delays 0,5]
import '../lib/runtime/node-version.js';
import { fork } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { scriptArgs } from './harness/args.js';
import { pathToFileURL } from 'node:url';
import { startGateway, eventually } from './harness/gateway.js';
import { sampleTree, cpuBetween } from './bench/proc-sampler.js';
import { askChild, track } from './bench/children.js';
import { welcomed } from './bench/ws-clients.js';

const MAX_CONNECTIONS = 10000; // one agent process, under the 20,000 open files
const { values } = scriptArgs({
  usage: '[--baseline ../old] [--connections 2000] [--channels 50] [--rate 10] [--seconds 5] [--delays 0,5]',
  options: {
    baseline: { type: 'string' },
    connections: { type: 'string', default: '2000' },
    channels: { type: 'string', default: '50' },
    rate: { type: 'string', default: '10' },
    seconds: { type: 'string', default: '5' },
    delays: { type: 'string', default: '0,5' },
    json: { type: 'string', default: 'scripts/results/coalesce.json' }
  }
});
const connections = Number(values.connections);
const channelCount = Number(values.channels);
const rate = Number(values.rate);
const seconds = Number(values.seconds);
if (!(Number.isInteger(connections) && connections > 0 && connections <= MAX_CONNECTIONS)) throw new Error(`--connections must be 1..${MAX_CONNECTIONS}`);
if (!(Number.isInteger(channelCount) && channelCount > 0 && channelCount <= 100)) throw new Error('--channels must be 1..100');
if (!(rate > 0 && rate <= 100)) throw new Error('--rate must be above 0 and at most 100');
if (!(seconds > 0 && seconds <= 60)) throw new Error('--seconds must be above 0 and at most 60');
const channels = Array.from({ length: channelCount }, (_, i) => `ticker:${i}`);

const variants = [];
if (values.baseline !== undefined) variants.push({ label: `baseline (${values.baseline})`, tree: resolve(values.baseline), flags: [] });
for (const delay of values.delays.split(',').map(Number)) variants.push({ label: `this tree, --write-delay ${delay}`, tree: undefined, flags: ['--write-delay', String(delay)] });

const load = `${connections} connections x ${channelCount} channels, ${rate} messages/s per channel, ${seconds} s`;
const results = { load, at: new Date().toISOString(), loadAverage: readFileSync('/proc/loadavg', 'utf8').trim(), runs: [] };
console.log(`${load}; machine load average before: ${results.loadAverage}`);
for (const variant of variants) {
  const run = await measure(variant);
  results.runs.push(run);
  console.log(
    `${variant.label.padEnd(36)} ${run.deliveries} deliveries (${run.expected} due)  ` +
      `CPU ${run.cpuUsPerDelivery} µs/delivery (worker ${run.workerUsPerDelivery})  ` +
      `${run.syscallsPerDelivery} write syscalls/delivery`
  );
}
const base = results.runs.find((r) => r.label.startsWith('baseline'));
if (base) for (const run of results.runs) if (run !== base) console.log(`${run.label}: ${round(run.cpuUsPerDelivery / base.cpuUsPerDelivery)}x the baseline's CPU per delivery`);
results.loadAverageAfter = readFileSync('/proc/loadavg', 'utf8').trim();
writeFileSync(values.json, `${JSON.stringify(results, null, 2)}\n`);
console.log(`machine load average after: ${results.loadAverageAfter}; written to ${values.json}`);
process.exit(0);

async function measure({ label, tree, flags }) {
  const harness = tree === undefined ? { startGateway } : await import(pathToFileURL(`${tree}/scripts/harness/gateway.js`).href);
  const gw = await harness.startGateway(['--workers', '1', '--max-publish-rate', '1000000', '--max-subscriptions', '100', ...flags], { timeout: 60000 });
  const agent = track(fork(new URL('./bench/coalesce-agent.js', import.meta.url), { stdio: 'inherit' }));
  try {
    await askChild(agent, { cmd: 'open', url: gw.url, count: connections, channels, first: 1 });
    const publisher = await welcomed(gw.url);
    const worker = gw.workerPid(1);
    const before = { tree: sampleTree(gw.proc.pid), writes: writeCalls(worker), messages: (await askChild(agent, { cmd: 'counts' })).messages };
    const ticks = Math.round(seconds * rate);
    for (let tick = 0; tick < ticks; tick++) {
      publishAll(publisher, tick);
      await new Promise((done) => setTimeout(done, 1000 / rate));
    }
    const expected = ticks * channelCount * connections;
    const received = async () => (await askChild(agent, { cmd: 'counts' })).messages - before.messages;
    await eventually(async () => (await received()) >= expected, { what: 'every message delivered', timeout: 60000, interval: 100 }).catch(() => {});
    const cpu = cpuBetween(before.tree, sampleTree(gw.proc.pid), gw.proc.pid);
    const writes = writeCalls(worker) - before.writes;
    const deliveries = await received();
    publisher.terminate();
    return {
      label,
      flags,
      deliveries,
      expected,
      cpuUsPerDelivery: round(cpu.totalUs / deliveries, 3),
      workerUsPerDelivery: round(cpu.workersUs / deliveries, 3),
      syscallsPerDelivery: round(writes / deliveries, 4)
    };
  } finally {
    await askChild(agent, { cmd: 'close' }).catch(() => {});
    agent.kill('SIGKILL');
    await gw.stop();
  }
}

/** One message on every channel, sent in one write: the worker reads them in one turn. */
function publishAll(ws, tick) {
  const socket = ws._socket;
  socket.cork();
  for (const channel of channels) ws.send(`{"type":"publish","channel":"${channel}","data":{"tick":${tick},"pad":"${'x'.repeat(64)}"}}`);
  socket.uncork();
}

/** write and writev calls the process made so far (every thread). */
function writeCalls(pid) {
  const line = readFileSync(`/proc/${pid}/io`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('syscw:'));
  return Number(line.slice(6));
}

function round(x, digits = 2) {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
