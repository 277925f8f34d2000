// Spreads a burst of client closes over several turns of the event loop, so
// thousands of clients leaving at once never hold a worker's loop (its
// timers, every other client) for more than a few ms a turn.
//
// libuv hands a worker every ready socket in one poll phase, and each step of
// a close costs the worker tens of µs (ws, Node's streams, the kernel). Each
// step is therefore queued and run a bounded amount per turn:
//
// - the close frames themselves: past READS_PER_TURN chunks in one turn, a
//   socket's chunk waits (the socket stops reading, so its next bytes stay in
//   the kernel and its order holds) and ws parses it in a later turn, for at
//   most BUDGET_MS per turn. Fewer reads than that in a turn go straight to
//   ws. Node's own read of each close frame is paced as a FIN's is (below):
//   past PAUSE_AFTER close frames read in one turn, every other socket stops
//   reading, so close frames from many client processes at once come up a
//   few hundred a turn. A chunk counts as a close frame by its first byte
//   alone, so a busy worker's ordinary reads, however many, pause nothing;
// - a close frame's answer (echo it, send FIN) is ws's own 'conclude'
//   handler, called later with the same arguments, for at most BUDGET_MS per
//   turn;
// - once answered, the socket stops reading from the kernel, so the client's
//   FIN waits there instead of coming up in a poll phase with thousands of
//   others (clients answer in bursts of their own, however evenly the answers
//   went out); ENDS_PER_TURN answered sockets a turn, oldest first, are then
//   closed without reading it (see turn());
// - a client that goes without a close frame (a closed tab, a crashed app, a
//   storm of reconnects): each FIN comes up as the end of its stream. Past
//   FINS_PER_TURN in one turn, a stream's end waits and ws handles it in a
//   later turn, FINS_PER_TURN a turn. The socket is made half-open (Node no
//   longer ends it by itself on the FIN), so nothing of the close happens
//   before ws's end handler runs. Node's own read of each FIN still costs:
//   past PAUSE_AFTER FINs in one turn, every other socket stops reading
//   (libuv then skips their events still in this poll phase), and
//   RESUMES_PER_TURN of them read again each turn, so a FIN still waiting
//   comes up among few.
//
// A close completes a few ms later at worst, and the server closes the TCP
// connection once the close frames are exchanged, as RFC 6455 asks, instead
// of waiting for the client's FIN. scripts/bench.js (mass-close) measures the
// longest stall.
import { performance } from 'node:perf_hooks';
import { readStart, readStop, receiverOf, socketOf, userEndListeners } from '../runtime/internals.js';
import { kPacedSocket, kPacerWaiting, kPacerPaused } from '../core/symbols.js';

const BUDGET_MS = 5;
const ENDS_PER_TURN = 100; // their work (ws's close event, ours) runs after this turn's code, so it is counted, not timed
const READS_PER_TURN = 500;
const FINS_PER_TURN = 50; // clients' FINs handed to ws in one turn
const PAUSE_AFTER = 200; // clients' FINs, or close frames, read in one turn
const RESUMES_PER_TURN = 200;
const CLOSE_FRAME = 0x88; // the first byte of a whole close frame: FIN set, opcode 8

export class ClosePacer {
  /** The defaults above; a test sets smaller ones. */
  constructor({
    budgetMs = BUDGET_MS,
    endsPerTurn = ENDS_PER_TURN,
    readsPerTurn = READS_PER_TURN,
    finsPerTurn = FINS_PER_TURN,
    pauseAfter = PAUSE_AFTER,
    resumesPerTurn = RESUMES_PER_TURN
  } = {}) {
    this.budgetMs = budgetMs;
    this.endsPerTurn = endsPerTurn;
    this.readsPerTurn = readsPerTurn;
    this.finsPerTurn = finsPerTurn;
    this.pauseAfter = pauseAfter;
    this.resumesPerTurn = resumesPerTurn;
    this.sockets = new Set(); // watched and open
    this.paused = new Fifo(); // sockets a pause stopped, to read again
    this.answers = new Fifo(); // receiver, code, reason
    this.ends = new Fifo(); // answered sockets, not reading
    this.chunks = new Fifo(); // socket, chunk: read past READS_PER_TURN, for ws later
    this.eofs = new Fifo(); // sockets whose client's FIN came past FINS_PER_TURN, for ws later
    this.reads = 0; // chunks read in this turn of the loop
    this.ended = 0; // streams ended by the client's FIN in this turn
    this.closeFrames = 0; // chunks read in this turn that start with a close frame
    this.counting = false; // whether this turn's counts are reset after its poll phase
    this.scheduled = false;
    this.turns = 0; // loop turns that answered or ended closes: a test reads it
    this.readsWaited = 0; // chunks that waited for a later turn: a test reads it
    this.eofsWaited = 0; // clients' FINs that waited for a later turn: a test reads it
    this.pauses = 0; // turns that stopped every socket's reads: a test reads it
    this.wsOnConclude = undefined; // ws's handler, the same function for every connection
    this.wsOnData = undefined; // ws's socket 'data' handler, likewise
    this.wsOnEnd = undefined; // ws's socket 'end' handler, likewise
    const self = this;
    this.onData = function onData(chunk) {
      self.count();
      if (chunk[0] === CLOSE_FRAME && ++self.closeFrames === self.pauseAfter) self.pauseReads();
      if (++self.reads <= self.readsPerTurn) return self.wsOnData.call(this, chunk);
      readStop(this);
      self.readsWaited++;
      this[kPacerWaiting] = true;
      self.chunks.push(this, chunk);
      self.schedule();
    };
    this.onEnd = function onEnd() {
      self.count();
      if (++self.ended === self.pauseAfter) self.pauseReads();
      if (self.ended <= self.finsPerTurn && self.eofs.size === 0) return self.wsOnEnd.call(this);
      self.eofsWaited++;
      self.eofs.push(this);
      self.schedule();
    };
    this.forget = function forget() {
      self.sockets.delete(this);
    };
    this.newTurn = () => {
      this.counting = false;
      this.reads = 0;
      this.ended = 0;
      this.closeFrames = 0;
    };
    this.onConclude = function onConclude(code, reason) {
      self.answers.push(this, code, reason);
      self.schedule();
    };
    this.hold = (socket) => {
      if (socket.destroyed) return;
      readStop(socket); // the stream still flows: it gets the FIN once reading starts again
      socket[kPacerWaiting] = true;
      this.ends.push(socket);
      this.schedule();
    };
    this.run = () => this.turn();
  }

  /** Takes over the close-frame handler and the socket's reads of a connection ws has just set up. */
  watch(ws) {
    const receiver = receiverOf(ws);
    const socket = socketOf(ws);
    const handlers = receiver.listeners('conclude');
    if (handlers.length !== 1 || (this.wsOnConclude !== undefined && handlers[0] !== this.wsOnConclude)) return;
    this.wsOnConclude = handlers[0];
    receiver.removeListener('conclude', this.wsOnConclude);
    receiver.on('conclude', this.onConclude);
    receiver[kPacedSocket] = socket;
    const readers = socket.listeners('data');
    if (readers.length !== 1 || (this.wsOnData !== undefined && readers[0] !== this.wsOnData)) return;
    this.wsOnData = readers[0];
    socket.removeListener('data', this.wsOnData);
    socket.on('data', this.onData);
    const enders = userEndListeners(socket);
    if (enders.length !== 1 || (this.wsOnEnd !== undefined && enders[0] !== this.wsOnEnd)) return;
    this.wsOnEnd = enders[0];
    socket.removeListener('end', this.wsOnEnd);
    socket.on('end', this.onEnd);
    socket.allowHalfOpen = true; // ws's end handler ends it, whenever it runs
    // Both set on every socket now: one shape for all, whichever a socket later gets.
    socket[kPacerWaiting] = false;
    socket[kPacerPaused] = false;
    this.sockets.add(socket);
    socket.on('close', this.forget);
  }

  /** Stops the reads of every socket reading now; turn() starts them again, RESUMES_PER_TURN a turn. */
  pauseReads() {
    this.pauses++;
    for (const socket of this.sockets) {
      // Left alone: stopped already (by the pacer, or by its stream for
      // backpressure), or its FIN read (a queued end's among them) or closing.
      if (socket[kPacerPaused] || socket[kPacerWaiting] || socket.readableEnded || socket.destroyed || socket.isPaused()) continue;
      readStop(socket);
      socket[kPacerPaused] = true;
      this.paused.push(socket);
    }
    this.schedule();
  }

  /** After this poll phase, the counts of a turn start again. */
  count() {
    if (this.counting) return;
    this.counting = true;
    setImmediate(this.newTurn);
  }

  schedule() {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(this.run);
  }

  turn() {
    this.scheduled = false;
    this.turns++;
    for (let n = 0; n < this.endsPerTurn && this.ends.size > 0; n++) {
      const socket = this.ends.shift();
      socket[kPacerWaiting] = false;
      if (socket.destroyed) continue;
      // Our close frame and FIN are out: the connection is closed (RFC 6455
      // 7.1.1, the server closes the TCP connection first), and the client's
      // FIN is never read. Reading it would end the stream, and ws's end
      // handler then ends the socket again, for an error Node builds with a
      // full stack trace and drops: a third of a close's CPU.
      if (socket.writableFinished) socket.destroy();
      else if (readStart(socket) !== 0) socket.destroy(); // still writing: the FIN ends it as usual
    }
    for (let n = 0; n < this.finsPerTurn && this.eofs.size > 0; n++) {
      const socket = this.eofs.shift();
      if (!socket.destroyed) this.wsOnEnd.call(socket);
    }
    for (let n = 0; n < this.resumesPerTurn && this.paused.size > 0; n++) {
      const socket = this.paused.shift();
      socket[kPacerPaused] = false;
      if (!socket.destroyed && readStart(socket) !== 0) socket.destroy();
    }
    const readUntil = performance.now() + this.budgetMs;
    while (this.chunks.size > 0 && performance.now() < readUntil) {
      const socket = this.chunks.shift();
      const chunk = this.chunks.shift();
      socket[kPacerWaiting] = false;
      if (socket.destroyed) continue;
      const answers = this.answers.size;
      this.wsOnData.call(socket, chunk);
      // Its next bytes: not when the chunk held its close frame (answered
      // first, then it stops reading, as above), nor when ws paused it (the
      // stream starts reading again itself on resume).
      if (this.answers.size > answers || socket.destroyed || socket.isPaused()) continue;
      if (readStart(socket) !== 0) socket.destroy();
    }
    const until = performance.now() + this.budgetMs;
    while (this.answers.size > 0) {
      const receiver = this.answers.shift();
      const code = this.answers.shift();
      const reason = this.answers.shift();
      // ws ignores the answer if the socket closed meanwhile.
      this.wsOnConclude.call(receiver, code, reason);
      // After ws's own resume (a tick of its own), which would read what is left.
      process.nextTick(this.hold, receiver[kPacedSocket]);
      if (performance.now() >= until) break;
    }
    if (this.answers.size > 0 || this.ends.size > 0 || this.chunks.size > 0 || this.eofs.size > 0 || this.paused.size > 0) this.schedule();
  }
}

/** A queue that reuses its array: shift without moving what is left. */
class Fifo {
  constructor() {
    this.items = [];
    this.head = 0;
  }

  get size() {
    return this.items.length - this.head;
  }

  push(...values) {
    this.items.push(...values);
  }

  shift() {
    const value = this.items[this.head];
    this.items[this.head++] = undefined;
    if (this.head === this.items.length) {
      this.items.length = 0;
      this.head = 0;
    }
    return value;
  }
}
