// The gate in front of the WebSocket upgrade: path, draining, capacity, Origin
// and per-IP cap are checked before ws does the handshake.
import { STATUS_CODES } from 'node:http';
import { clientIp } from './client-ip.js';
import { workerCapacity } from '../doctor/limits.js';

/**
 * @param {object} options
 * @param {object} options.config resolved gateway configuration
 * @param {import('ws').WebSocketServer} options.wss in noServer mode
 * @param {import('./connections.js').Connections} options.connections
 * @param {import('./close-pacer.js').ClosePacer} options.closes
 * @param {() => boolean} options.draining
 * @param {(reason: string) => void} options.rejected counts a refused upgrade
 * @returns {(req, socket, head) => void} the server's 'upgrade' listener
 */
export function createUpgradeHandler({ config, wss, connections, closes, draining, rejected }) {
  const origins = config.allowedOrigins && new Set(config.allowedOrigins);
  const capacity = workerCapacity(config);

  const refuse = (socket, status, reason) => {
    rejected(reason);
    refuseUpgrade(socket, status, reason);
  };

  // ws calls it with the request: the client's IP is read again rather than
  // held in a closure per connection.
  const upgraded = (ws, req) => {
    closes.watch(ws);
    connections.accept(ws, clientIp(req, config.trustForwarded));
  };

  return function handleUpgrade(req, socket, head) {
    socket.on('error', ignore);
    if (req.url.split('?', 1)[0] !== config.path) return refuse(socket, 404, 'not_found');
    if (draining()) return refuse(socket, 503, 'draining');
    if (connections.count >= capacity) return refuse(socket, 503, 'over_capacity');
    if (origins && !origins.has(req.headers.origin)) return refuse(socket, 403, 'origin');
    const ip = clientIp(req, config.trustForwarded);
    if (!connections.perIp.allows(ip)) return refuse(socket, 429, 'ip_cap');
    // ws answers 101 and the welcome follows at once (no verifyClient: all
    // synchronous): corked, both leave in one write.
    socket.cork();
    wss.handleUpgrade(req, socket, head, upgraded);
    socket.uncork();
  };
}

function refuseUpgrade(socket, status, reason) {
  const body = JSON.stringify({ error: reason });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nConnection: close\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`
  );
}

function ignore() {}
