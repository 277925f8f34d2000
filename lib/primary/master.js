// The public listener. sticky-session's Master listens, and this subclass
// takes each accepted connection as the bare TCP handle libuv hands it (no
// net.Socket made in the primary), picks the worker (see ./balancer.js),
// optionally reads a PROXY protocol header first, and sends the handle over
// IPC; it closes the connection when no worker is alive instead of throwing.
import net from 'node:net';
import { require } from '../require.js';
import { Message } from '../ipc.js';
import { normalizeIp } from '../worker/client-ip.js';
import { detachHandle, onHandleAck, takeConnections } from '../internals.js';
import { InternalCode } from '../errors.js';

const sticky = require('sticky-session');

export class GatewayMaster extends sticky.Master {
  /**
   * @param {object} options
   * @param {import('./supervisor.js').Supervisor} options.supervisor
   * @param {import('./balancer.js').Balancer} options.balancer
   * @param {(socket) => Promise<{ip: string, head: Buffer}>} [options.readProxyHeader]
   * @param {(reason: string) => void} options.refused counts a connection closed here
   * @param {() => void} options.stalled counts a hand-over the watchdog gave up waiting for
   */
  constructor({ supervisor, balancer, readProxyHeader, refused, stalled }) {
    super(0); // no workers of Master's own: the supervisor keeps them
    this.supervisor = supervisor;
    this.balancer = balancer;
    this.readProxyHeader = readProxyHeader;
    this.refused = refused;
    this.stalled = stalled;
    this.lines = new Map(); // cluster worker -> its HandOverLine
    this.peer = {}; // getpeername's answer, reused
    // In place of net.Server's own connection callback, which would wrap
    // each handle in a net.Socket (~20 µs made and destroyed per connection)
    // only for the handle to leave again. Set before the first poll of the
    // loop, so before any connection can be accepted.
    this.once('listening', () => {
      try {
        takeConnections(this, (err, handle) => this.balance(err, handle));
      } catch (err) {
        this.emit('error', err);
      }
      this.watchdog = setInterval(() => this.lines.forEach(watch), WATCHDOG_MS).unref();
    });
    this.once('close', () => clearInterval(this.watchdog));
  }

  /** The listening handle's connection callback: a TCP handle, not yet reading. */
  balance(err, handle) {
    if (err) {
      this.refused('accept'); // EMFILE and the like: libuv has closed the connection already
      return;
    }
    // A client already gone has no peer (ENOTCONN): no address, as net.Socket's remoteAddress would say.
    const ip = handle.getpeername(this.peer) === 0 ? normalizeIp(this.peer.address) : '';
    if (this.readProxyHeader === undefined) {
      this.handOver(handle, ip, undefined);
      return;
    }
    const socket = new net.Socket({ handle, readable: true, writable: true, pauseOnCreate: true });
    socket.on('error', ignore);
    this.readProxyHeader(socket).then(
      ({ ip: client, head }) => this.handOver(detachHandle(socket), client ?? ip, head),
      (err) => {
        this.refused(err.code ?? InternalCode.PROXY_HEADER);
        socket.destroy();
      }
    );
  }

  handOver(handle, ip, head) {
    const slot = this.balancer.pick(ip, this.supervisor.live());
    if (slot === undefined) {
      this.refused('no_worker');
      handle.close();
      return;
    }
    slot.handed++;
    this.lineTo(slot.worker).push(handle, { type: Message.SOCKET, ip, head: head?.length ? head.toString('base64') : undefined });
  }

  lineTo(worker) {
    let line = this.lines.get(worker);
    if (line === undefined) {
      line = new HandOverLine(worker, this.stalled);
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
 * The handles on their way to one worker. Node sends one handle at a time and
 * waits for the worker's acknowledgement; while it waits it queues every
 * further send, and on each acknowledgement it passes its whole queue through
 * send again, re-queueing all but the first: in a burst of connections the
 * primary's cost per handle grew with the queue. This line keeps the queue
 * itself and gives Node the next handle only once the previous one is
 * acknowledged, so each hand-over costs the same however many wait. Handles
 * still queued when the worker dies are closed with it.
 *
 * The primary closes its own copy of a handle once the message is written:
 * the descriptor in flight is then the kernel's, and closes with the worker
 * if it dies before reading it. (A net.Socket sent without keepOpen would be
 * held until the worker's acknowledgement, and forever if the worker died
 * first: a client left hanging.)
 *
 * An acknowledgement that never comes (a worker stuck, or a runtime that
 * changed how it acknowledges) must not hold every later connection: the
 * master's watchdog moves the line on after WATCHDOG_MS to 2 × WATCHDOG_MS,
 * and counts it.
 */
export class HandOverLine {
  /**
   * @param {import('node:cluster').Worker} worker
   * @param {() => void} stalled called when the watchdog moves on without an acknowledgement
   */
  constructor(worker, stalled) {
    this.worker = worker;
    this.stalled = stalled;
    this.queue = []; // handle, message, handle, message, ...
    this.head = 0;
    this.waiting = undefined; // the handle sent and not yet acknowledged
    this.watched = undefined; // `waiting` as the watchdog saw it last
    // Node's own listener, registered first, has handled the acknowledgement by then.
    onHandleAck(worker.process, () => this.acknowledged());
  }

  /** The watchdog's visit: a handle still waiting since the previous visit has waited too long. */
  watch() {
    if (this.waiting !== undefined && this.waiting === this.watched) {
      this.stalled();
      this.acknowledged();
    }
    this.watched = this.waiting;
  }

  push(handle, message) {
    this.queue.push(handle, message);
    if (this.waiting === undefined) this.next();
  }

  next() {
    const { queue } = this;
    if (this.head === queue.length) {
      queue.length = 0;
      this.head = 0;
      return;
    }
    const handle = queue[this.head];
    const message = queue[this.head + 1];
    queue[this.head] = queue[this.head + 1] = undefined;
    this.head += 2;
    this.waiting = handle;
    this.worker.send(message, handle, undefined, (err) => {
      handle.close();
      // Never reached the worker: no acknowledgement will come.
      if (err && this.waiting === handle) this.acknowledged();
    });
  }

  acknowledged() {
    this.waiting = undefined;
    this.next();
  }

  close() {
    for (let i = this.head; i < this.queue.length; i += 2) this.queue[i].close();
    this.queue.length = 0;
    this.head = 0;
  }
}

const WATCHDOG_MS = 500;

function watch(line) {
  line.watch();
}

function ignore() {}
