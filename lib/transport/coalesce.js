// Coalesced writes: what a connection is sent within one turn of the
// worker's event loop goes out in one write, one system call for all of its
// frames, wherever several may come: a batch of messages from the primary on
// many of its channels (../worker/relay.js fans one out within batch()),
// the answers and acks of a burst of its own commands (ws's sends), or, under
// --write-delay, anything. The first such write of a turn corks the socket;
// the end of the turn (setImmediate), or --write-delay ms later, uncorks
// every socket corked meanwhile, and Node hands each one's frames to the
// kernel in one writev. A lone message's fan-out (the common case) writes
// straight out: corking thousands of sockets for one frame each would cost
// more than it saves. Frames stay in the order they were written, whoever
// wrote them: a write to a corked socket waits behind the earlier ones.
//
// A corked socket's bytes count in its writableLength (ws's bufferedAmount).
// Past 64 KiB held (HELD_BYTES in ./transport.js) the socket is uncorked at
// once: a burst reaches the kernel as it comes, as it did write by write,
// and only what the peer does not read makes a slow consumer.

// One per worker, made by its wiring (a process has one event loop, whose
// turn it follows) and handed to each way in, whose connections' writes go
// through it (./transport.js writeBytes, ./ws-transport.js send), and to the
// relay, which fans batches out within batch().
export class WriteCoalescer {
  /** @param {number} [delay] --write-delay, ms (0: the end of the turn) */
  constructor(delay = 0) {
    this.delay = delay;
    this.batching = false; // while a batch of several messages is fanned out
    this.corked = []; // sockets corked since the last flush
    this.scheduled = false;
    this.flush = this.flush.bind(this);
  }

  /**
   * Runs `fanOut`, whose writes are held to the flush when `several` (a
   * batch of several messages may reach a connection several times: one
   * write for all); a lone message's go straight out.
   */
  batch(several, fanOut) {
    this.batching = several;
    try {
      fanOut();
    } finally {
      this.batching = false;
    }
  }

  /** A fan-out's write: held while batching or under --write-delay, else straight out. */
  fanOut(socket) {
    if (this.batching || this.delay > 0) this.hold(socket);
  }

  /** Holds the socket's writes until the flush; a socket corked already (this turn) stays as it is. */
  hold(socket) {
    if (socket.writableCorked !== 0) return;
    socket.cork();
    this.corked.push(socket);
    if (this.scheduled) return;
    this.scheduled = true;
    if (this.delay === 0) setImmediate(this.flush);
    else setTimeout(this.flush, this.delay);
  }

  /** Writes out what every held socket was given: one write each. */
  flush() {
    this.scheduled = false;
    const corked = this.corked;
    this.corked = [];
    for (const socket of corked) socket.uncork();
  }
}
