#!/usr/bin/env node
// Where a delivery's time goes in a worker: the fan-out scenario (one
// channel, every connection subscribed, one publish at a time) against a
// one-worker gateway running under V8's CPU profiler, then the worker's
// profile summed by function, the heaviest first (self time: the function's
// own code, not its callees). Writes the .cpuprofile files to --out, which
// Chrome DevTools opens.
//
//   node scripts/profile-fanout.js [--subscribers 15000] [--seconds 8] [--top 25] [--out /tmp/fanout-profile]
import '../lib/runtime/node-version.js'; // first: an unsupported Node stops here, with one line
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { once } from 'node:events';
import path from 'node:path';
import { scriptArgs } from './harness/args.js';
import { Server } from './bench/servers.js';
import { Load, shortfall } from './bench/load.js';
import { publishInTurn } from './bench/publisher.js';

const { values } = scriptArgs({
  usage: '[--subscribers 15000] [--seconds 8] [--top 25] [--out /tmp/fanout-profile]',
  options: {
    subscribers: { type: 'string', default: '15000' },
    seconds: { type: 'string', default: '8' },
    top: { type: 'string', default: '25' },
    out: { type: 'string', default: '/tmp/fanout-profile' }
  }
});
const size = Number(values.subscribers);
const out = path.resolve(values.out);
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

// The gateway's processes inherit the profiler through NODE_OPTIONS; the load generator's agents do not.
process.env.NODE_OPTIONS = `--cpu-prof --cpu-prof-dir=${out}`;
const server = await Server.start('gateway', ['--workers', '1', '--max-publish-rate', '1000000', '--drain-timeout', '500']);
delete process.env.NODE_OPTIONS;
const load = new Load(server, { connections: size, channels: 1, rate: 5000, duration: Number(values.seconds) + 10, processes: Math.max(2, Math.ceil(size / 5000)) });
if (!(await load.held(server, { subscribed: true }))) throw new Error(`load fell short: ${shortfall(await load.report, false)}`);
const run = await publishInTurn(server.url, { channel: 'c0', seconds: Number(values.seconds), messageSize: 128 });
if (run.error) throw new Error(run.error);
// A drained worker exits by itself, and only then writes its profile.
server.proc.kill('SIGTERM');
await once(server.proc, 'exit');
await load.report;

const deliveries = run.published * (size + 1);
// CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile: the worker's is the one that is not the primary's.
const file = readdirSync(out).find((f) => f.endsWith('.cpuprofile') && f.split('.')[3] !== String(server.pid));
const rows = selfTimes(JSON.parse(readFileSync(path.join(out, file), 'utf8'))).filter((r) => r.name !== '(idle)');
const total = rows.reduce((sum, r) => sum + r.us, 0);
console.log(`fan-out to ${size} subscribers, ${run.published} publishes, ${deliveries} deliveries in ${run.seconds.toFixed(1)} s; worker profile ${path.join(out, file)}`);
console.log(`worker busy (not idle) in the profile: ${(total / 1000).toFixed(0)} ms, ${(total / deliveries).toFixed(2)} µs per delivery\n`);
console.log('  self %   µs/delivery  function');
for (const r of rows.slice(0, Number(values.top))) {
  console.log(`${((100 * r.us) / total).toFixed(1).padStart(7)}  ${(r.us / deliveries).toFixed(3).padStart(11)}  ${r.name}`);
}

/** Self time per function (name, file and line), heaviest first. */
function selfTimes({ nodes, samples, timeDeltas }) {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const us = new Map();
  for (let i = 0; i < samples.length; i++) {
    const { functionName, url, lineNumber } = byId.get(samples[i]).callFrame;
    const name = `${functionName || '(anonymous)'} ${url ? `${url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*\/(lib|scripts)\//, '$1/')}:${lineNumber + 1}` : ''}`.trim();
    us.set(name, (us.get(name) ?? 0) + (timeDeltas[i] ?? 0));
  }
  return [...us].map(([name, t]) => ({ name, us: t })).sort((a, b) => b.us - a.us);
}
