// A bare WebSocket handshake driver for what bin/loadgen does not do: a
// PROXY protocol v1 header in front of the upgrade, the way a TCP load
// balancer sends it. It opens raw TCP connections at a paced rate, writes the
// (optional) header and the upgrade request, counts the 101 answers and holds
// the sockets until told to close them. No frame parsing: the client costs
// little, so the server's CPU is what is measured.
import net from 'node:net';
import { randomBytes } from 'node:crypto';

const TICK_MS = 10;
const TIMEOUT_MS = 10000;

/**
 * @param {object} o
 * @param {number} o.port
 * @param {string} o.path
 * @param {number} o.count connections to open
 * @param {number} o.rate per second
 * @param {number} o.inFlight handshakes outstanding at most
 * @param {boolean} o.proxy write a PROXY v1 header first
 * @param {string[]} o.sources local addresses, round robin
 * @returns {Promise<{opened: number, failed: number, seconds: number, close: () => void}>}
 */
export function openHandshakes({ port, path, count, rate, inFlight, proxy, sources }) {
  const request =
    `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
    `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`;
  const sockets = [];
  let started = 0;
  let pending = 0;
  let opened = 0;
  let failed = 0;
  const begun = performance.now();
  return new Promise((resolve) => {
    const settle = (socket, ok) => {
      if (socket.settled) return;
      socket.settled = true;
      pending--;
      if (ok) opened++;
      else {
        failed++;
        socket.destroy();
      }
    };
    const timer = setInterval(() => {
      const due = Math.min(count, Math.ceil(((performance.now() - begun) / 1000) * rate));
      while (started < due && pending < inFlight) {
        const i = started++;
        pending++;
        // The header names a client address of its own (loopback, like every address here) per connection.
        const header = proxy ? `PROXY TCP4 127.1.${(i >> 8) & 255}.${i & 255} 127.0.0.1 ${40000 + (i % 20000)} 443\r\n` : '';
        const socket = net.connect({ host: '127.0.0.1', port, localAddress: sources[i % sources.length] });
        socket.setTimeout(TIMEOUT_MS, () => settle(socket, false));
        socket.once('connect', () => socket.write(header + request));
        socket.once('data', (chunk) => {
          socket.setTimeout(0);
          settle(socket, chunk.toString('latin1', 0, 12) === 'HTTP/1.1 101');
        });
        socket.on('error', () => settle(socket, false));
        socket.on('data', ignore); // the welcome and pings: read and dropped
        sockets.push(socket);
      }
      if (started === count && pending === 0) {
        clearInterval(timer);
        resolve({ opened, failed, seconds: (performance.now() - begun) / 1000, close: () => sockets.forEach((s) => s.destroy()) });
      }
    }, TICK_MS);
  });
}

function ignore() {}
