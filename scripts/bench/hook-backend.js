// The application's backend for scripts/bench-hooks.js, in a process of its
// own so its CPU is neither the gateway's nor the load's: answers every hook
// with a new user after `delayMs`, and records each request's start and end
// by the gateway's socket (remote port), so the bench can tell how many were
// in flight at once per gateway worker.
//   node scripts/bench/hook-backend.js --delay-ms N   (forked: talks over IPC)
import http from 'node:http';
import { scriptArgs } from '../harness/args.js';

const delayMs = Number(scriptArgs({ usage: '--delay-ms N', options: { 'delay-ms': { type: 'string', default: '0' } } }).values['delay-ms']);
let requests = 0;
let inFlight = 0;
let maxInFlight = 0;
let events = []; // [ms, remote port, +1 | -1]
const sockets = new Set();

const server = http.createServer((req, res) => {
  requests++;
  maxInFlight = Math.max(maxInFlight, ++inFlight);
  const port = req.socket.remotePort;
  sockets.add(port);
  events.push([performance.now(), port, 1]);
  req.resume();
  req.on('end', () => {
    const answer = () => {
      inFlight--;
      events.push([performance.now(), port, -1]);
      res.writeHead(200, { 'content-type': 'application/json' }).end(`{"result":{"user":"u${requests}"}}`);
    };
    if (delayMs > 0) setTimeout(answer, delayMs);
    else answer();
  });
});
server.keepAliveTimeout = 120000;
server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));

process.on('message', (msg) => {
  if (msg === 'report') process.send({ requests, maxInFlight, sockets: sockets.size, events });
  if (msg === 'reset') {
    requests = inFlight = maxInFlight = 0;
    events = [];
    sockets.clear();
  }
});
process.on('disconnect', () => process.exit(0));
