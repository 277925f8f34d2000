#!/usr/bin/env node
// The floor under the gateway's handshake: what Node's handle passing alone
// costs, with no HTTP and no WebSocket. A listener accepts N loopback
// connections and either closes each itself (in place), or hands each to a
// child process that only closes it: wrapped in a net.Socket first (as
// sticky-session does), or as the bare TCP handle (as the gateway's primary
// does, lib/primary/master.js). CPU per connection of each process, all its
// threads, from process.cpuUsage.
//
//   node scripts/bench-handover.js [--connections 10000]
import { fork } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import { scriptArgs } from './harness/args.js';
import { HandOverLine } from '../lib/primary/master.js';
import { takeConnections } from '../lib/runtime/internals.js';

const IN_FLIGHT = 200; // connections the client keeps opening at once
const MODES = {
  'in place': 'accepts and closes each connection itself',
  'net.Socket': 'hands each to a child as a net.Socket (keepOpen, then destroyed)',
  handle: 'hands each to a child as the bare TCP handle'
};

const { values } = scriptArgs({
  usage: '[--connections 10000]',
  options: { role: { type: 'string', default: 'main' }, port: { type: 'string' }, connections: { type: 'string', default: '10000' } }
});
if (values.role === 'child') child();
else if (values.role === 'client') client(Number(values.port), Number(values.connections));
else await main(Number(values.connections));

async function main(n) {
  console.log(`Node's handle passing, ${n} loopback connections per mode: server CPU µs per connection`);
  for (const [mode, what] of Object.entries(MODES)) {
    const { listener, child: inChild } = await run(mode, n);
    const total = listener + inChild;
    console.log(`  ${mode.padEnd(10)} listener ${listener.toFixed(1).padStart(5)}  child ${inChild.toFixed(1).padStart(5)}  total ${total.toFixed(1).padStart(5)}   (${what})`);
  }
}

async function run(mode, n) {
  const worker = mode === 'in place' ? undefined : fork(process.argv[1], ['--role', 'child']);
  if (worker) await once(worker, 'message');
  const line = worker && new HandOverLine({ process: worker, send: (...args) => worker.send(...args) });
  const server = net.createServer({ pauseOnConnect: true }, (socket) => {
    if (mode === 'in place') return void socket.destroy();
    socket.server = null; // a bare socket: the child keeps no record of it for this server
    server._connections--;
    worker.send({}, socket, { keepOpen: true }, () => socket.destroy());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  if (mode === 'handle') takeConnections(server, (err, handle) => err || line.push(handle, {}));
  const before = process.cpuUsage();
  const load = fork(process.argv[1], ['--role', 'client', '--port', String(server.address().port), '--connections', String(n)]);
  await once(load, 'exit');
  const listener = cpuUs(process.cpuUsage(before)) / n;
  server.close();
  if (!worker) return { listener, child: 0 };
  worker.send('cpu');
  const [childUs] = await once(worker, 'message');
  worker.kill();
  return { listener, child: childUs / n };
}

// Net.Socket handles are the child's to close; its CPU is read once connections start arriving.
function child() {
  let before;
  process.on('message', (msg, handle) => {
    if (msg === 'cpu') return void process.send(cpuUs(process.cpuUsage(before)));
    before ??= process.cpuUsage();
    if (handle instanceof net.Socket) handle.destroy();
    else handle?.close();
  });
  process.send('ready');
}

// Opens n connections, IN_FLIGHT at a time, from 16 source addresses, and waits for the server to close each.
function client(port, n) {
  let started = 0;
  let closed = 0;
  const open = () => {
    const socket = net.connect({ port, host: '127.0.0.1', localAddress: `127.0.0.${1 + (started++ % 16)}` });
    socket.on('error', ignore);
    socket.on('close', () => {
      if (++closed === n) process.exit(0);
      if (started < n) open();
    });
    socket.resume();
  };
  for (let i = 0; i < Math.min(IN_FLIGHT, n); i++) open();
}

function cpuUs({ user, system }) {
  return user + system;
}

function ignore() {}
