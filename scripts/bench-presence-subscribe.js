#!/usr/bin/env node
// What one Pusher presence subscribe costs between the worker and the
// primary, loopback only, bounded in count: a gateway with one worker, one
// Pusher connection subscribing to --channels presence channels one after
// another (each signed as an application's auth endpoint signs it), each
// until its subscription_succeeded. Reported per subscribe: the wait (p50,
// p99), the write calls of the worker and of the primary (/proc/<pid>/io
// syscw: each IPC batch is one write, the frame to the client one more), and
// the CPU of both. --old DIR runs another checkout's gateway the same way,
// side by side.
//
//   node scripts/bench-presence-subscribe.js [--old DIR] [--channels 500] [--rounds 3] [--json scripts/results/presence-subscribe.json]
import '../lib/runtime/node-version.js';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { scriptArgs } from './harness/args.js';
import { startGateway } from './harness/gateway.js';
import { cpuUsOf, treeOf } from './bench/proc-sampler.js';
import { quantile } from '../lib/loadgen/quantile.js';
import { sign } from '../lib/pusher/signatures.js';

const APP = { appId: 'bench', key: 'bench-key', secret: 'bench-secret-of-24-chars' };
const { values } = scriptArgs({
  usage: '[--old DIR] [--channels 500] [--rounds 3] [--json scripts/results/presence-subscribe.json]',
  options: {
    old: { type: 'string', default: '' },
    channels: { type: 'string', default: '500' },
    rounds: { type: 'string', default: '3' },
    json: { type: 'string', default: 'scripts/results/presence-subscribe.json' }
  }
});
const channels = Number(values.channels);
const rounds = Number(values.rounds);
if (!(channels >= 10 && channels <= 5000 && rounds >= 1 && rounds <= 10)) throw new Error('--channels 10..5000, --rounds 1..10');
const trees = [{ label: 'gateway', bin: fileURLToPath(new URL('../bin/gateway.js', import.meta.url)) }];
if (values.old !== '') trees.push({ label: 'old gateway', bin: path.resolve(values.old, 'bin/gateway.js') });

const results = [];
for (let round = 0; round < rounds; round++) for (const tree of trees) results.push({ round, ...(await measure(tree, round)) });
const medians = trees.map(({ label }) => {
  const mine = results.filter((r) => r.label === label);
  const median = (key) => quantile(mine.map((r) => r[key]), 0.5);
  return { label, p50Ms: median('p50Ms'), p99Ms: median('p99Ms'), workerWrites: median('workerWrites'), primaryWrites: median('primaryWrites'), workerCpuUs: median('workerCpuUs'), primaryCpuUs: median('primaryCpuUs') };
});
console.table(medians);
writeFileSync(values.json, `${JSON.stringify({ at: new Date().toISOString(), channels, rounds, medians, results }, null, 2)}\n`);

async function measure({ label, bin }, round) {
  const gw = await startGateway(['--workers', '1', '--max-subscriptions', String(2 * channels + 10), '--pusher-app-id', APP.appId, '--pusher-key', APP.key, '--pusher-secret', APP.secret], { gateway: bin });
  try {
    const [primary, worker] = treeOf(gw.proc.pid);
    const ws = new WebSocket(`ws://127.0.0.1:${gw.port}/app/${APP.key}?protocol=7`);
    const frames = [];
    let waiting;
    ws.on('message', (data) => {
      const frame = JSON.parse(data);
      frames.push(frame);
      if (waiting !== undefined && waiting.test(frame)) waiting.resolve(frame);
    });
    const next = (test) => new Promise((resolve) => (waiting = { test, resolve }));
    const established = await next((f) => f.event === 'pusher:connection_established');
    const socketId = JSON.parse(established.data).socket_id;
    const before = { worker: writesOf(worker), primary: writesOf(primary), workerCpu: cpuUsOf(worker), primaryCpu: cpuUsOf(primary) };
    const waits = [];
    for (let i = 0; i < channels; i++) {
      const channel = `presence-r${round}-${i}`;
      const channelData = JSON.stringify({ user_id: `user-${i}`, user_info: { name: 'bench' } });
      const auth = `${APP.key}:${sign(APP.secret, `${socketId}:${channel}:${channelData}`)}`;
      const start = performance.now();
      const done = next((f) => f.channel === channel && f.event !== 'pusher_internal:member_added');
      ws.send(JSON.stringify({ event: 'pusher:subscribe', data: { channel, auth, channel_data: channelData } }));
      const answer = await done;
      if (answer.event !== 'pusher_internal:subscription_succeeded') throw new Error(`${channel}: ${JSON.stringify(answer)}`);
      waits.push(performance.now() - start);
    }
    const per = (now, then) => Math.round(((now - then) / channels) * 100) / 100;
    const figures = {
      label,
      workerWrites: per(writesOf(worker), before.worker),
      primaryWrites: per(writesOf(primary), before.primary),
      workerCpuUs: per(cpuUsOf(worker), before.workerCpu),
      primaryCpuUs: per(cpuUsOf(primary), before.primaryCpu),
      p50Ms: Math.round(quantile(waits, 0.5) * 1000) / 1000,
      p99Ms: Math.round(quantile(waits, 0.99) * 1000) / 1000
    };
    ws.close();
    return figures;
  } finally {
    await gw.stop();
  }
}

/** A process's write calls so far. */
function writesOf(pid) {
  return Number(/syscw: (\d+)/.exec(readFileSync(`/proc/${pid}/io`, 'utf8'))[1]);
}
