// The public listener. sticky-session's Master accepts every connection paused
// and hands the socket to a worker over IPC; this subclass picks the worker
// (see ./balancer.js), optionally reads a PROXY protocol header first, and
// closes the connection when no worker is alive instead of throwing.
import { require } from '../require.js';
import { Message } from '../ipc.js';
import { normalizeIp } from '../worker/client-ip.js';

const sticky = require('sticky-session');

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
    this.lines = new Map(); // cluster worker -> its HandOverLine
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
    this.lineTo(slot.worker).push(socket, { type: Message.SOCKET, ip, head: head?.length ? head.toString('base64') : undefined });
  }

  lineTo(worker) {
    let line = this.lines.get(worker);
    if (line === undefined) {
      line = new HandOverLine(worker);
      this.lines.set(worker, line);
      worker.once('exit', () => {
        line.close();
        this.lines.delete(worker);
      });
    }
    return line;
  }
}

/**
 * The sockets on their way to one worker. Node sends one handle at a time and
 * waits for the worker's acknowledgement; while it waits it queues every
 * further send, and on each acknowledgement it passes its whole queue through
 * send again, re-queueing all but the first: in a burst of connections the
 * primary's cost per socket grew with the queue. This line keeps the queue
 * itself and gives Node the next socket only once the previous one is
 * acknowledged, so each hand-over costs the same however many wait. Sockets
 * still queued when the worker dies are closed with it.
 *
 * Each socket goes with keepOpen, and the primary closes its own copy once
 * the message is written: the descriptor in flight is then the kernel's, and
 * closes with the worker if it dies before reading it. With keepOpen: false
 * Node would hold the primary's copy until the worker's acknowledgement, and
 * forever if the worker died first: a client left hanging (4 of 180 HTTP
 * requests made right after a worker was killed did, before this).
 */
export class HandOverLine {
  constructor(worker) {
    this.worker = worker;
    this.queue = []; // socket, message, socket, message, ...
    this.head = 0;
    this.waiting = undefined; // the socket sent and not yet acknowledged
    // Node's own listener, registered first, has handled the acknowledgement by then.
    worker.process.on('internalMessage', (msg) => {
      if (msg?.cmd === 'NODE_HANDLE_ACK' || msg?.cmd === 'NODE_HANDLE_NACK') this.acknowledged();
    });
  }

  push(socket, message) {
    this.queue.push(socket, message);
    if (this.waiting === undefined) this.next();
  }

  next() {
    const { queue } = this;
    while (this.head < queue.length) {
      const socket = queue[this.head];
      const message = queue[this.head + 1];
      queue[this.head] = queue[this.head + 1] = undefined;
      this.head += 2;
      // A client gone while queued has no handle left: Node would send the message alone, and no acknowledgement would come.
      if (socket.destroyed) continue;
      this.waiting = socket;
      this.worker.send(message, socket, { keepOpen: true }, (err) => {
        socket.destroy();
        // Never reached the worker: no acknowledgement will come.
        if (err && this.waiting === socket) this.acknowledged();
      });
      return;
    }
    queue.length = 0;
    this.head = 0;
  }

  acknowledged() {
    this.waiting = undefined;
    this.next();
  }

  close() {
    for (let i = this.head; i < this.queue.length; i += 2) this.queue[i].destroy();
    this.queue.length = 0;
    this.head = 0;
  }
}

function ignore() {}
