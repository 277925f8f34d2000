#!/usr/bin/env node
// sticky-session's own per-connection path against the gateway's, side by
// side in one run, over the same workers: loopback WebSocket handshakes, and
// the CPU each costs the primary and the workers.
//
// - sticky-session: its Master as published. net.Server makes a net.Socket
//   of every connection (pauseOnConnect), Master#balance hashes the address
//   (ip.toBuffer and its hash) and sends the socket to the worker with
//   Node's send, which holds it until the worker acknowledges and queues the
//   next ones behind it.
// - gateway: lib/primary/master.js, a subclass of that Master which takes
//   the listening handle's connections itself (lib/runtime/internals.js,
//   takeConnections): the bare TCP handle, never a net.Socket in the
//   primary, the worker picked by lib/primary/balancer.js, one handle at a
//   time per worker on its hand-over line.
//
// The gateway installs an empty `ip` package (lib/primary/ip-stub), so
// sticky-session's balance cannot run there as it is; for this comparison
// the stub is given the one function balance calls, ip.toBuffer for IPv4.
// Workers are the same for both: an HTTP server with ws (noServer), fed the
// sockets they are sent. Modes alternate, --rounds times each.
//
//   node scripts/bench-sticky.js [--connections 5000] [--workers 2] [--rounds 2] [--json FILE]
import { fork } from 'node:child_process';
import cluster from 'node:cluster';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import { scriptArgs } from './harness/args.js';
import { fileURLToPath } from 'node:url';
import { require } from '../lib/runtime/require.js';
import { Message } from '../lib/core/ipc.js';
import { openHandshakes } from './bench/raw-handshakes.js';
import { cpuUsOf } from './bench/proc-sampler.js';

const SCRIPT = fileURLToPath(import.meta.url);
const MODES = ['sticky-session', 'gateway'];
const SOURCES = Array.from({ length: 16 }, (_, i) => `127.0.0.${i + 1}`);

const { values } = scriptArgs({
  usage: '[--connections 5000] [--workers 2] [--rounds 2] [--json FILE]',
  options: {
    role: { type: 'string', default: 'driver' },
    mode: { type: 'string' },
    connections: { type: 'string', default: '5000' },
    workers: { type: 'string', default: '2' },
    rounds: { type: 'string', default: '2' },
    json: { type: 'string' }
  }
});

if (values.role === 'worker') worker();
else if (values.role === 'primary') await primary(values.mode, Number(values.workers));
else await driver(Number(values.connections), Number(values.workers), Number(values.rounds));

async function driver(connections, workers, rounds) {
  console.log(`${connections} loopback WebSocket handshakes over ${workers} workers, from ${SOURCES.length} source addresses; ${rounds} rounds per mode, alternated`);
  const runs = [];
  for (let r = 0; r < rounds; r++) {
    for (const mode of MODES) {
      const run = await measure(mode, connections, workers);
      runs.push(run);
      console.log(
        `  ${mode.padEnd(15)} ${String(run.handshakesPerSec).padStart(6)} handshakes/s   primary ${run.primaryCpuUs.toFixed(1).padStart(5)} µs CPU each   workers ${run.workersCpuUs.toFixed(1).padStart(5)} µs   (${run.failed} failed)`
      );
    }
  }
  const summary = Object.fromEntries(MODES.map((mode) => [mode, best(runs.filter((r) => r.mode === mode))]));
  const ratio = summary['sticky-session'].primaryCpuUs / summary.gateway.primaryCpuUs;
  console.log(`  primary CPU per handshake, best of each: sticky-session ${summary['sticky-session'].primaryCpuUs.toFixed(1)} µs, gateway ${summary.gateway.primaryCpuUs.toFixed(1)} µs (${ratio.toFixed(2)}×)`);
  const machine = { date: new Date().toISOString(), node: process.version, cpus: os.availableParallelism() };
  if (values.json) writeFileSync(values.json, JSON.stringify({ ...machine, connections, workers, runs, summary }, null, 2) + '\n');
}

/** One mode: a fresh primary and workers, the handshakes, the CPU each process spent on them. */
async function measure(mode, connections, workers) {
  const primary = fork(SCRIPT, ['--role', 'primary', '--mode', mode, '--workers', String(workers)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const [{ port, pids }] = await once(primary, 'message');
  const before = pids.map(cpuUsOf);
  primary.send('cpu');
  const [primaryBefore] = await once(primary, 'message');
  const run = await openHandshakes({ port, path: '/ws', count: connections, rate: 1e6, inFlight: 500, proxy: false, sources: SOURCES });
  primary.send('cpu');
  const [primaryAfter] = await once(primary, 'message');
  const workersUs = pids.map(cpuUsOf).reduce((sum, us, i) => sum + us - before[i], 0);
  run.close();
  primary.kill();
  await once(primary, 'exit');
  return {
    mode,
    handshakes: run.opened,
    failed: run.failed,
    handshakesPerSec: Math.round(run.opened / run.seconds),
    primaryCpuUs: (primaryAfter - primaryBefore) / run.opened,
    workersCpuUs: workersUs / run.opened
  };
}

/** The run whose primary spent least per handshake: the one least disturbed by the rest of the machine. */
function best(runs) {
  return runs.reduce((a, b) => (b.primaryCpuUs < a.primaryCpuUs ? b : a));
}

async function primary(mode, workers) {
  cluster.setupPrimary({ exec: SCRIPT, args: ['--role', 'worker'] });
  const forked = Array.from({ length: workers }, () => cluster.fork());
  await Promise.all(forked.map((w) => once(w, 'message')));
  const server = mode === 'gateway' ? await gatewayMaster(forked) : stickyMaster(forked);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  process.on('message', () => {
    const { user, system } = process.cpuUsage();
    process.send(user + system);
  });
  process.on('SIGTERM', () => {
    for (const w of forked) w.process.kill('SIGKILL');
    process.exit(0);
  });
  process.send({ port: server.address().port, pids: forked.map((w) => w.process.pid) });
}

function stickyMaster(workers) {
  const sticky = require('sticky-session');
  require('ip').toBuffer = (address) => Buffer.from(address.replace(/^::ffff:/, '').split('.').map(Number));
  const master = new sticky.Master(0);
  master.workers = workers;
  return master;
}

async function gatewayMaster(workers) {
  const { GatewayMaster } = await import('../lib/primary/master.js');
  const { Balancer } = await import('../lib/primary/balancer.js');
  const slots = workers.map((worker, i) => ({ number: i + 1, worker, sockets: 0, received: 0, handed: 0 }));
  return new GatewayMaster({ supervisor: { live: () => slots }, balancer: new Balancer('ip'), refused() {}, stalled() {} });
}

function worker() {
  const http = require('node:http');
  const { WebSocketServer } = require('ws');
  const server = http.createServer((req, res) => res.writeHead(404).end());
  const wss = new WebSocketServer({ noServer: true, clientTracking: false, perMessageDeflate: false });
  server.on('upgrade', (req, socket, head) => wss.handleUpgrade(req, socket, head, (ws) => ws.on('error', ignore)));
  process.on('message', (msg, handle) => {
    if (msg === 'sticky:balance' && handle) {
      // As sticky-session's own worker side (sticky.listen) takes it.
      server.emit('connection', handle);
      handle.resume();
    } else if (msg?.type === Message.SOCKET && handle) {
      // As the gateway's worker takes it (lib/worker/index.js, adopt).
      server.emit('connection', new net.Socket({ handle, readable: true, writable: true }));
    }
  });
  process.send('ready');
}

function ignore() {}
