#!/usr/bin/env node
// Carries TCP streams across a network namespace's edge (./netns.js), run
// inside the namespace: each argument `<from>=<to>` listens on `from` and
// connects each stream to `to`, where either is `tcp:<port>` (127.0.0.1 in
// this namespace) or `unix:<path>` (a file, which every namespace sees).
// Prints `ready` once every listener is up; exits when its stdin closes.
import net from 'node:net';

const endpoint = (spec) => (spec.startsWith('unix:') ? { path: spec.slice(5) } : { port: Number(spec.slice(4)), host: '127.0.0.1' });

let left = process.argv.length - 2;
for (const arg of process.argv.slice(2)) {
  const [from, to] = arg.split('=').map(endpoint);
  net
    .createServer((inbound) => {
      const outbound = net.connect(to);
      inbound.pipe(outbound).pipe(inbound);
      inbound.on('error', () => outbound.destroy());
      outbound.on('error', () => inbound.destroy());
      inbound.on('close', () => outbound.destroy());
      outbound.on('close', () => inbound.destroy());
    })
    .listen(from, () => {
      if (--left === 0) console.log('ready');
    });
}
process.stdin.on('close', () => process.exit(0));
process.stdin.resume();
