// The WebSocket's way in: the upgrade path, then the admission gate
// (./admission.js), then ws's handshake. Where the primary counts IPs, the
// upgrade waits for its answer first.
import { STATUS_CODES } from 'node:http';
import { clientIp } from './client-ip.js';

/**
 * @param {object} options
 * @param {object} options.config resolved gateway configuration
 * @param {import('ws').WebSocketServer} options.wss in noServer mode
 * @param {import('./admission.js').Admission} options.admission
 * @param {import('./connections.js').Connections} options.connections
 * @param {import('./close-pacer.js').ClosePacer} options.closes
 * @param {(reason: string) => void} options.rejected counts a refused upgrade
 * @returns {(req, socket, head) => void} the server's 'upgrade' listener
 */
export function createUpgradeHandler({ config, wss, admission, connections, closes, rejected }) {
  const refuse = (socket, status, reason, message) => {
    rejected(reason);
    refuseUpgrade(socket, status, reason, message);
  };

  // ws calls it with the request: the client's IP is read again rather than
  // held in a closure per connection.
  const upgraded = (ws, req) => {
    closes.watch(ws);
    connections.accept(ws, clientIp(req, config.trustForwarded), req);
  };

  /** @returns {boolean} whether ws upgraded the connection (it answers a bad handshake itself) */
  const handshake = (req, socket, head) => {
    const opened = connections.opened;
    // ws answers 101 and the welcome follows at once (no verifyClient: all
    // synchronous): corked, both leave in one write.
    socket.cork();
    wss.handleUpgrade(req, socket, head, upgraded);
    socket.uncork();
    return connections.opened !== opened;
  };

  return function handleUpgrade(req, socket, head) {
    socket.on('error', ignore);
    if (req.url.split('?', 1)[0] !== config.path) return refuse(socket, 404, 'not_found', `WebSockets are served on ${config.path}`);
    const refusal = admission.check(req);
    if (refusal !== undefined) return refuse(socket, refusal.status, refusal.reason, refusal.message);
    if (!admission.ipsInPrimary) return void handshake(req, socket, head);
    const ip = clientIp(req, config.trustForwarded);
    admission.reserveIp(ip).then((refused) => {
      if (refused !== undefined) return refuse(socket, refused.status, refused.reason, refused.message);
      if (!handshake(req, socket, head)) admission.releaseIp(ip); // gone while the primary counted, or a bad handshake
    });
  };
}

function refuseUpgrade(socket, status, reason, message) {
  const body = JSON.stringify({ error: reason, message });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nConnection: close\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  );
}

function ignore() {}
