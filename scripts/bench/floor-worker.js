// A stand-in worker for the base-memory scenario: a process forked with an
// IPC channel, as the gateway's workers are, that loads only what `mode`
// says, then reports its memory. What the gateway's worker holds beyond
// `http+ws` is its own; below that is Node's and ws's floor.
//   --mode bare (nothing) | http+ws (an HTTP server and a ws server on it)
import { scriptArgs } from '../harness/args.js';
import { require } from '../../lib/runtime/require.js';
import { smapsOf } from './smaps.js';

const SETTLE_MS = 1500;

if (scriptArgs({ usage: '[options]', options: { mode: { type: 'string', default: 'bare' } } }).values.mode === 'http+ws') {
  const http = require('node:http');
  const { WebSocketServer } = require('ws');
  const server = http.createServer();
  new WebSocketServer({ server });
  server.listen(0, '127.0.0.1');
}
setTimeout(() => process.send(smapsOf(process.pid), () => process.exit(0)), SETTLE_MS);
