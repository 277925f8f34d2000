// Webhook receivers that take their time: `--ports N` HTTP servers on
// 127.0.0.1 (each its own origin), each answering any request 200 after
// `--delay-ms`. Prints {"ports": [...]} once listening; counts what it got
// and prints {"requests": N} on SIGTERM.
import http from 'node:http';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { ports: { type: 'string', default: '10' }, 'delay-ms': { type: 'string', default: '1000' } } });
const delay = Number(values['delay-ms']);
let requests = 0;
const servers = await Promise.all(
  Array.from({ length: Number(values.ports) }, () => {
    const server = http.createServer((req, res) => {
      requests++;
      req.resume();
      req.on('end', () => setTimeout(() => res.end('ok'), delay));
    });
    return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
  })
);
console.log(JSON.stringify({ ports: servers.map((s) => s.address().port) }));
process.on('SIGTERM', () => {
  console.log(JSON.stringify({ requests }));
  process.exit(0);
});
