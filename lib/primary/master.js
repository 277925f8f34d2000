// The public listener. sticky-session's Master listens, and this subclass
// takes each accepted connection as the bare TCP handle libuv hands it (no
// net.Socket made in the primary), picks the worker (see ./balancer.js),
// optionally reads a PROXY protocol header first, and sends the handle over
// IPC; it closes the connection when no worker is alive instead of throwing.
import net from 'node:net';
import { require } from '../runtime/require.js';
import { Message } from '../core/ipc.js';
import { normalizeIp } from '../session/client-ip.js';
import { detachHandle, freeHandleQueue, holdHandleQueue, onHandleAck, takeConnections } from '../runtime/internals.js';
import { Ticker } from '../runtime/ticker.js';
import { InternalCode } from '../core/errors.js';

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
    });
    // Runs only while a hand-over waits for its acknowledgement.
    this.watchdog = new Ticker('handover-watchdog', WATCHDOG_MS, () => {
      let waiting = false;
      for (const line of this.lines.values()) waiting = line.watch() || waiting;
      return waiting;
    });
    this.once('close', () => this.watchdog.stop());
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
    this.watchdog.start();
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
 * The handles on their way to one worker. Node sends a child one handle at a
 * time: after each it queues every further send until the child
 * acknowledges, then passes its whole queue through send again, re-queueing
 * all but the first. That is a round trip between the two processes per
 * connection (the primary sleeping and waking for each acknowledgement),
 * and in a burst a cost per handle that grew with the queue. The child needs
 * no such wait (each read of the channel carries at most one handle, with
 * its own message), so this line keeps up to WINDOW handles in flight,
 * written while Node holds nothing queued (../internals.js), and keeps the
 * rest itself: a burst goes out in one turn, its acknowledgements come back
 * together. Handles still queued when the worker dies are closed with it.
 *
 * The primary closes its own copy of a handle once the message is written:
 * the descriptor in flight is then the kernel's, and closes with the worker
 * if it dies before reading it. (A net.Socket sent without keepOpen would be
 * held until the worker's acknowledgement, and forever if the worker died
 * first: a client left hanging.)
 *
 * An acknowledgement that never comes (a worker stuck, or a runtime that
 * changed how it acknowledges) must not hold every later connection: the
 * master's watchdog stops waiting for it after WATCHDOG_MS to 2 × WATCHDOG_MS,
 * counts it, and the line moves on.
 */
export class HandOverLine {
  static WINDOW = 32; // handles in flight to one worker

  /**
   * @param {import('node:cluster').Worker} worker
   * @param {() => void} stalled called when the watchdog moves on without an acknowledgement
   */
  constructor(worker, stalled) {
    this.worker = worker;
    this.stalled = stalled;
    this.queue = []; // handle, message, handle, message, ...: not sent yet
    this.head = 0;
    this.sent = []; // handles sent and awaited, oldest first
    this.sentHead = 0;
    this.unacked = 0; // handles sent whose acknowledgement has not come, given-up ones included
    this.forgiven = 0; // of those, the ones the watchdog stopped waiting for
    this.watched = undefined; // `waiting` as the watchdog saw it last
    // Node's own listener, registered first, has handled the acknowledgement by then.
    onHandleAck(worker.process, () => this.acknowledged());
  }

  /** The oldest handle awaited, if any. */
  get waiting() {
    return this.sent[this.sentHead];
  }

  /**
   * The watchdog's visit: the oldest handle still awaited since the previous visit has waited too long.
   * @returns {boolean} whether a handle is awaited or queued now
   */
  watch() {
    if (this.waiting !== undefined && this.waiting === this.watched) {
      this.stalled();
      this.forgiven++;
      this.forget();
      this.next();
    }
    this.watched = this.waiting;
    return this.waiting !== undefined || this.head < this.queue.length;
  }

  push(handle, message) {
    this.queue.push(handle, message);
    this.next();
  }

  next() {
    const { queue } = this;
    while (this.head < queue.length && this.unacked - this.forgiven < HandOverLine.WINDOW) {
      if (this.unacked > 0 && !freeHandleQueue(this.worker.process)) break; // Node holds other messages: after the next acknowledgement
      const handle = queue[this.head];
      const message = queue[this.head + 1];
      queue[this.head] = queue[this.head + 1] = undefined;
      this.head += 2;
      this.unacked++;
      this.sent.push(handle);
      this.worker.send(message, handle, undefined, (err) => {
        handle.close();
        if (err) this.unsent(handle); // never reached the worker: no acknowledgement will come
      });
    }
    if (this.head === queue.length) {
      queue.length = 0;
      this.head = 0;
    }
  }

  acknowledged() {
    // One of no handle of this line's (the start-up probe's, ./probe.js, when
    // a connection came first): while this line's handles wait behind it in
    // Node's queue, Node writes them itself, so the counts stay safe.
    if (this.unacked === 0) return;
    this.unacked--;
    if (this.forgiven > 0) this.forgiven--; // the late one of a handle the watchdog gave up on (they come in order)
    else this.forget();
    if (this.unacked > 0) holdHandleQueue(this.worker.process);
    this.next();
  }

  /** The oldest awaited handle is awaited no more. */
  forget() {
    this.sent[this.sentHead++] = undefined;
    if (this.sentHead === this.sent.length) {
      this.sent.length = 0;
      this.sentHead = 0;
    }
  }

  unsent(handle) {
    const at = this.sent.indexOf(handle, this.sentHead);
    if (at === -1) return;
    this.sent.splice(at, 1);
    this.unacked--;
    if (this.sentHead === this.sent.length) {
      this.sent.length = 0;
      this.sentHead = 0;
    }
    this.next();
  }

  close() {
    for (let i = this.head; i < this.queue.length; i += 2) this.queue[i].close();
    this.queue.length = 0;
    this.head = 0;
  }
}

const WATCHDOG_MS = 500;

function ignore() {}
