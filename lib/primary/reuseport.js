// --balance reuseport, checked before any worker starts: the platform and
// this Node must let several listeners share the port (SO_REUSEPORT, Linux
// 3.9+, Node 22.12+'s `reusePort`). The check binds the port twice, as two
// workers will, so a platform without it (or with a port taken by something
// else) is refused at start, with the reason, not found out by the workers.
// It also settles --port 0: the workers must share one port, so the primary
// picks it here.
import { ListenError, UsageError } from '../core/errors.js';
import net from 'node:net';
import { once } from 'node:events';

/**
 * @param {{host: string, port: number, platform?: string}} where platform: the seam a test sets
 * @returns {Promise<number>} the port the workers will share
 * @throws {UsageError} with the reason the mode cannot be used here
 */
export async function reservePort({ host, port, platform = process.platform }) {
  if (platform !== 'linux') throw new UsageError(`--balance reuseport needs Linux (SO_REUSEPORT spreading connections): this is ${platform}`);
  const first = await listen(host, port).catch((err) => {
    throw err.syscall === 'listen' ? new ListenError('--port', err) : err;
  });
  try {
    const shared = first.address().port;
    const second = await listen(host, shared).catch((err) => {
      throw new UsageError(`--balance reuseport: a second listener on ${host}:${shared} failed (${err.code}): this kernel or Node does not share the port`);
    });
    second.close();
    return shared;
  } finally {
    first.close(); // listening only as long as the check: a primary's listener would take connections
  }
}

async function listen(host, port) {
  const server = net.createServer();
  server.listen({ host, port, reusePort: true, exclusive: true });
  await once(server, 'listening');
  return server;
}
