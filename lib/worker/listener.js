// Under --balance reuseport each worker listens on the public port itself,
// with SO_REUSEPORT: the kernel spreads new connections over the workers'
// listeners by a hash of the addresses, no socket crosses a process boundary
// and the primary accepts nothing. What the primary does in the other modes
// happens here: the PROXY header is read before the HTTP parser sees a byte,
// and a connection that sends half a header or none costs one socket until
// --proxy-timeout.
import net from 'node:net';
import { once } from 'node:events';
import { readProxyHeader } from '../transport/proxy-protocol.js';
import { normalizeIp } from '../session/client-ip.js';
import { InternalCode } from '../core/errors.js';

/**
 * @param {object} config resolved gateway configuration (the primary has settled --port)
 * @param {(socket: net.Socket, ip: string, head?: Buffer) => void} accept hands a connection to the HTTP server
 * @param {(reason: string) => void} refused counts a connection closed before any HTTP
 * @returns {Promise<net.Server>} once it listens (rejects if it cannot)
 */
export async function listenOwnPort(config, accept, refused) {
  const direct = (socket) => accept(socket, normalizeIp(socket.remoteAddress));
  const viaProxyHeader = (socket) => {
    socket.on('error', ignore);
    readProxyHeader(socket, config.proxyTimeout).then(
      ({ ip, head }) => {
        accept(socket, ip ?? normalizeIp(socket.remoteAddress), head);
        socket.resume(); // paused while the header was read; the HTTP parser reads from here
      },
      (err) => {
        refused(err.code ?? InternalCode.PROXY_HEADER);
        socket.destroy();
      }
    );
  };
  const listener = net.createServer({ pauseOnConnect: config.proxyProtocol }, config.proxyProtocol ? viaProxyHeader : direct);
  // exclusive: a cluster worker's listen would otherwise be routed to the primary's handle.
  listener.listen({ port: config.port, host: config.host, backlog: config.backlog, reusePort: true, exclusive: true });
  await once(listener, 'listening');
  return listener;
}

function ignore() {}
