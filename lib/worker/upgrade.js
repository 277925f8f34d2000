// The WebSocket's way in: the upgrade path, which picks the protocol (the
// native one on --path, another protocol's on its own paths: ../wiring/ways-in.js),
// the protocol's ws server for the request (the native protocol's by its
// encoding: Sec-WebSocket-Protocol, ../codecs/index.js), then the admission
// gate (../session/admission.js), then ws's handshake. Where the primary counts IPs,
// the upgrade waits for its answer first.
import { STATUS_CODES } from 'node:http';
import { ErrorCode, GatewayError } from '../core/errors.js';
import { clientIp } from '../session/client-ip.js';
import { handling } from '../transport/last-input.js';

/**
 * A way in by WebSocket: the paths it serves, the ws server (noServer mode)
 * that handshakes a request, and what accepts its connections.
 * @typedef {object} UpgradeWay
 * @property {(path: string) => boolean} matches
 * @property {(req) => import('ws').WebSocketServer} serverFor throws the
 *   GatewayError refusing a request it cannot serve
 * @property {{opened: number, accept: (ws, ip: string, req) => void}} connections
 * @property {(req, socket, head, err) => void} [refuse] answers the admission
 *   gate's refusal its protocol's way (default: an HTTP answer)
 */

/**
 * @param {object} options
 * @param {object} options.config resolved gateway configuration
 * @param {UpgradeWay[]} options.ways the native way first
 * @param {import('../session/admission.js').Admission} options.admission
 * @param {import('../transport/close-pacer.js').ClosePacer} options.closes
 * @param {(reason: string) => void} options.rejected counts a refused upgrade
 * @returns {(req, socket, head) => void} the server's 'upgrade' listener
 */
export function createUpgradeHandler({ config, ways, admission, closes, rejected }) {
  const refuse = (way, req, socket, head, err) => {
    if (!(err instanceof GatewayError)) throw err;
    rejected(err.code);
    if (way?.refuse === undefined) refuseUpgrade(socket, err);
    else way.refuse(req, socket, head, err);
  };

  // ws calls it with the request: the client's IP is read again rather than
  // held in a closure per connection.
  const upgradedBy = new Map(
    ways.map((way) => [
      way,
      (ws, req) => {
        closes.watch(ws);
        way.connections.accept(ws, clientIp(req, config.trustForwarded), req);
      }
    ])
  );

  /** @returns {boolean} whether ws upgraded the connection (it answers a bad handshake itself) */
  const handshake = (way, wss, req, socket, head) => {
    const opened = way.connections.opened;
    // ws answers 101 and the welcome follows at once (no verifyClient: all
    // synchronous): corked, both leave in one write.
    socket.cork();
    wss.handleUpgrade(req, socket, head, upgradedBy.get(way));
    socket.uncork();
    return way.connections.opened !== opened;
  };

  return function handleUpgrade(req, socket, head) {
    socket.on('error', ignore);
    const path = req.url.split('?', 1)[0];
    handling('upgrade', `${req.method} ${path}`);
    const way = ways.find((candidate) => candidate.matches(path));
    let wss;
    try {
      if (way === undefined) throw new GatewayError(ErrorCode.NOT_FOUND, `WebSockets are served on ${config.path}`);
      wss = way.serverFor(req);
      admission.check(req);
    } catch (err) {
      return refuse(way, req, socket, head, err);
    }
    if (!admission.ipsInPrimary) return void handshake(way, wss, req, socket, head);
    const ip = clientIp(req, config.trustForwarded);
    admission.reserveIp(ip).then(
      () => {
        if (!handshake(way, wss, req, socket, head)) admission.releaseIp(ip); // gone while the primary counted, or a bad handshake
      },
      (err) => refuse(way, req, socket, head, err)
    );
  };
}

/**
 * The refusal as an HTTP answer on a socket the HTTP server let go of (an
 * upgrade, a CONNECT): a browser cannot read it, but a load balancer's
 * health checks and other clients can.
 */
export function refuseUpgrade(socket, { status, code, message }) {
  const body = JSON.stringify({ error: code, message });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nConnection: close\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  );
}

function ignore() {}
