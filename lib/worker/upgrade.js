// The WebSocket's way in: the upgrade path and the encoding
// (Sec-WebSocket-Protocol, ../codecs/index.js), then the admission gate
// (./admission.js), then ws's handshake by the encoding's server. Where the
// primary counts IPs, the upgrade waits for its answer first.
import { STATUS_CODES } from 'node:http';
import { ErrorCode, GatewayError } from '../errors.js';
import { negotiate } from '../codecs/index.js';
import { clientIp } from './client-ip.js';

/**
 * @param {object} options
 * @param {object} options.config resolved gateway configuration
 * @param {{json: import('ws').WebSocketServer, msgpack: import('ws').WebSocketServer}} options.servers
 *   in noServer mode, one per encoding
 * @param {import('./admission.js').Admission} options.admission
 * @param {import('./connections.js').Connections} options.connections
 * @param {import('./close-pacer.js').ClosePacer} options.closes
 * @param {(reason: string) => void} options.rejected counts a refused upgrade
 * @returns {(req, socket, head) => void} the server's 'upgrade' listener
 */
export function createUpgradeHandler({ config, servers, admission, connections, closes, rejected }) {
  const refuse = (socket, err) => {
    if (!(err instanceof GatewayError)) throw err;
    rejected(err.code);
    refuseUpgrade(socket, err);
  };

  // ws calls it with the request: the client's IP is read again rather than
  // held in a closure per connection.
  const upgraded = (ws, req) => {
    closes.watch(ws);
    connections.accept(ws, clientIp(req, config.trustForwarded), req);
  };

  /** @returns {boolean} whether ws upgraded the connection (it answers a bad handshake itself) */
  const handshake = (req, socket, head, wss) => {
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
    let wss;
    try {
      if (req.url.split('?', 1)[0] !== config.path) throw new GatewayError(ErrorCode.NOT_FOUND, `WebSockets are served on ${config.path}`);
      wss = servers[negotiate(req.headers['sec-websocket-protocol'])];
      admission.check(req);
    } catch (err) {
      return refuse(socket, err);
    }
    if (!admission.ipsInPrimary) return void handshake(req, socket, head, wss);
    const ip = clientIp(req, config.trustForwarded);
    admission.reserveIp(ip).then(
      () => {
        if (!handshake(req, socket, head, wss)) admission.releaseIp(ip); // gone while the primary counted, or a bad handshake
      },
      (err) => refuse(socket, err)
    );
  };
}

/** The refusal as an HTTP answer: a browser cannot read it, but a load balancer's health checks and other clients can. */
function refuseUpgrade(socket, { status, code, message }) {
  const body = JSON.stringify({ error: code, message });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nConnection: close\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  );
}

function ignore() {}
