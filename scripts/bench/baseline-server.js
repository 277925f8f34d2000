// What the plain ws baselines (scripts/baseline-ws.js, scripts/baseline-pusher.js)
// share: their flags, one HTTP server with a WebSocketServer on it, the
// keepalive from ws's README (every interval, one sweep terminates whoever
// missed the last ping and pings the rest), a normal exit on SIGTERM (so
// --cpu-prof writes its profile) and the ready line the benchmarks wait for.
import http from 'node:http';
import { scriptArgs } from '../harness/args.js';
import { WebSocketServer } from 'ws';

/**
 * @param {object} options
 * @param {number} options.pingInterval the default of --ping-interval, ms
 * @param {string} [options.path] the WebSocket path; any when left out
 * @param {(req, res) => void} options.request every plain HTTP request
 * @param {(ws) => void} options.connection a new connection, its liveness already watched
 * @returns {{wss: WebSocketServer, pingInterval: number, pings: () => number}} pings: sent so far
 */
export function startBaseline({ pingInterval, path, request, connection }) {
  const { values } = scriptArgs({
  usage: '[options]',
    options: {
      port: { type: 'string', default: '8080' },
      host: { type: 'string', default: '127.0.0.1' },
      'ping-interval': { type: 'string', default: String(pingInterval) }
    }
  });
  const interval = Number(values['ping-interval']);
  const server = http.createServer(request);
  const wss = new WebSocketServer({ server, path, perMessageDeflate: false });
  let pings = 0;
  wss.on('connection', (ws) => {
    ws.isAlive = true;
    ws.on('pong', () => (ws.isAlive = true));
    connection(ws);
  });
  setInterval(() => {
    for (const ws of wss.clients) {
      if (!ws.isAlive) {
        ws.terminate();
        continue;
      }
      ws.isAlive = false;
      ws.ping();
      pings++;
    }
  }, interval);
  process.on('SIGTERM', () => process.exit(0));
  server.listen(Number(values.port), values.host, () => {
    console.log(JSON.stringify({ msg: 'baseline ready', port: server.address().port }));
  });
  return { wss, pingInterval: interval, pings: () => pings };
}
