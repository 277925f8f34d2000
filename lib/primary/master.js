// The public listener. sticky-session's Master accepts every connection paused
// and hands the socket to a worker over IPC; this subclass picks the worker
// (see ./balancer.js), optionally reads a PROXY protocol header first, and
// closes the connection when no worker is alive instead of throwing.
import sticky from 'sticky-session';
import { Message } from '../ipc.js';
import { normalizeIp } from '../worker/client-ip.js';

export class GatewayMaster extends sticky.Master {
  /**
   * @param {object} options
   * @param {import('./supervisor.js').Supervisor} options.supervisor
   * @param {import('./balancer.js').Balancer} options.balancer
   * @param {(socket) => Promise<{ip: string, head: Buffer}>} [options.readProxyHeader]
   * @param {(reason: string) => void} options.refused counts a connection closed here
   */
  constructor({ supervisor, balancer, readProxyHeader, refused }) {
    super(0); // no workers of Master's own: the supervisor keeps them
    this.supervisor = supervisor;
    this.balancer = balancer;
    this.readProxyHeader = readProxyHeader;
    this.refused = refused;
    this.inFlight = new Map(); // cluster worker -> sockets queued to it
  }

  /** Connection listener (Master passes it to net.Server). */
  balance(socket) {
    socket.on('error', ignore);
    if (this.readProxyHeader === undefined) {
      this.handOver(socket, normalizeIp(socket.remoteAddress), undefined);
      return;
    }
    this.readProxyHeader(socket).then(
      ({ ip, head }) => this.handOver(socket, ip ?? normalizeIp(socket.remoteAddress), head),
      (err) => {
        this.refused(err.code ?? 'proxy_header');
        socket.destroy();
      }
    );
  }

  handOver(socket, ip, head) {
    const slot = this.balancer.pick(ip, this.supervisor.live());
    if (slot === undefined) {
      this.refused('no_worker');
      socket.destroy();
      return;
    }
    slot.handed++;
    // Hand the socket over as a bare one. Sent as a net.Server's socket, Node
    // would track it in the worker with a close listener (a closure per
    // connection) to report back when all are closed; the gateway never asks.
    socket.server = null;
    this._connections--;
    const inFlight = this.inFlightTo(slot.worker);
    inFlight.add(socket);
    const message = { type: Message.SOCKET, ip, head: head?.length ? head.toString('base64') : undefined };
    // keepOpen, then close our copy once written: the descriptor in flight is
    // the kernel's own, closed with the worker if it dies before reading it.
    // With keepOpen: false Node would hold our copy until the worker's ACK,
    // and forever if the worker died first: a client left hanging.
    slot.worker.send(message, socket, { keepOpen: true }, () => {
      inFlight.delete(socket);
      socket.destroy();
    });
  }

  /**
   * Sockets queued to a worker but not yet written to its IPC channel. Node
   * keeps them queued while the worker has not acknowledged an earlier
   * socket; if the worker dies meanwhile they would hang open forever, so they
   * are closed with it.
   */
  inFlightTo(worker) {
    let sockets = this.inFlight.get(worker);
    if (sockets === undefined) {
      sockets = new Set();
      this.inFlight.set(worker, sockets);
      worker.once('exit', () => {
        for (const socket of sockets) socket.destroy();
        this.inFlight.delete(worker);
      });
    }
    return sockets;
  }
}

function ignore() {}
