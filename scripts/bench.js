#!/usr/bin/env node
// `npm run bench`: the gateway side by side with a plain ws server and Node's
// cluster, scenario by scenario, in one run; writes scripts/results/latest.json
// and latest.md. See scripts/bench/ for the parts, --help for the options.
//
//   node scripts/bench.js [--smoke] [--scenarios idle,fan-out] [--idle-connections 15000] ...
import '../lib/runtime/node-version.js'; // first: an unsupported Node stops here, with one line
import os from 'node:os';
import { scriptArgs } from './harness/args.js';
import { OPTIONS, resolveBenchOptions } from './bench/options.js';
import { idle } from './bench/scenarios/idle.js';
import { handshake } from './bench/scenarios/handshake.js';
import { proxy } from './bench/scenarios/proxy.js';
import { fanout } from './bench/scenarios/fanout.js';
import { relay } from './bench/scenarios/relay.js';
import { keepalive } from './bench/scenarios/keepalive.js';
import { massClose } from './bench/scenarios/mass-close.js';
import { gc } from './bench/scenarios/gc.js';
import { balance } from './bench/scenarios/balance.js';
import { auth } from './bench/scenarios/auth.js';
import { tls } from './bench/scenarios/tls.js';
import { channels, recovery } from './bench/scenarios/recovery.js';
import { redis } from './bench/scenarios/redis.js';
import { sse } from './bench/scenarios/sse.js';
import { ably, pusher } from './bench/scenarios/pusher.js';
import { baseMemory } from './bench/scenarios/base-memory.js';
import { runResult } from './bench/result.js';
import { writeReport } from './bench/report.js';

const ALL = ['gateway', 'ws', 'cluster'];
// The gateway's accept modes side by side: the primary hands over (ip, even), or each worker listens (reuseport).
const MODES = ['gateway', 'gateway-even', 'gateway-reuseport', 'ws'];
const byKind = (kinds) => kinds.map((kind) => ({ kind }));
// The gateway caps its workers' young generation itself; this one caps the
// primary's too, which only a Node flag can (see README, Memory).
const SMALL_SEMI_SPACE = { kind: 'gateway', label: 'gateway, primary also node --max-semi-space-size=2', nodeArgs: ['--max-semi-space-size=2'] };

/** What each scenario runs: a list of results. */
const RUN = {
  idle: (o) => idle(o, o.idleConnections, [...byKind([...MODES, 'cluster']), ...(o.smoke ? [] : [SMALL_SEMI_SPACE])], o.workers),
  // A single process cannot hold this many (20k open files): gateway and cluster only.
  'idle-large': (o) => idle(o, o.largeConnections, byKind(['gateway', 'cluster']), o.largeWorkers),
  handshake: (o) => handshake(o, [...MODES, 'cluster']),
  proxy,
  // The smoke mode starts the cluster baseline in idle already: it stays short.
  'fan-out': (o) => fanout(o, o.smoke ? ['gateway', 'ws'] : ALL),
  relay,
  keepalive: (o) => keepalive(o, ['gateway', 'ws']),
  'mass-close': (o) => massClose(o, ['gateway', 'ws']),
  gc,
  balance,
  auth,
  tls,
  channels,
  recovery,
  redis,
  sse,
  pusher,
  ably,
  'base-memory': baseMemory
};

const { values, usageError } = scriptArgs({
  usage: '[--smoke] [options]',
  options: {
    smoke: { type: 'boolean', describe: 'tiny sizes: proves the scripts still work (npm run test:slow)' },
    ...Object.fromEntries(Object.entries(OPTIONS).map(([name, [full, smoke, help]]) => [name, { type: 'string', describe: `${help} (${full}; smoke ${smoke})` }]))
  }
});
let opts;
try {
  opts = resolveBenchOptions(values);
} catch (err) {
  usageError(err.message);
}
const started = performance.now();
const runs = [];
for (const scenario of opts.scenarios) {
  process.stderr.write(`bench: ${scenario}\n`);
  try {
    runs.push(...(await RUN[scenario](opts)));
  } catch (err) {
    runs.push(runResult({ scenario, variant: 'all', short: `error: ${err.message.split('\n')[0]}` }));
  }
  const latest = runs.at(-1);
  process.stderr.write(`bench: ${scenario} done (${latest.status}${latest.short ? `: ${latest.short}` : ''})\n`);
}

const meta = {
  date: new Date().toISOString().slice(0, 16).replace('T', ' ') + ' UTC',
  machine: `${os.availableParallelism()} cores (${os.cpus()[0]?.model.trim()}), ${Math.round(os.totalmem() / 2 ** 30)} GiB RAM, Node ${process.version}, Linux ${os.release()}`,
  command: `node scripts/bench.js ${process.argv.slice(2).join(' ')}`.trim(),
  durationS: Math.round((performance.now() - started) / 1000),
  options: opts
};
console.log(writeReport(opts.out, { meta, runs }));
