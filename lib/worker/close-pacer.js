// Spreads a burst of client closes over several turns of the event loop.
//
// libuv hands a worker every ready socket in one poll phase (up to 48 × 1024
// events), and answering a close costs ~50 µs in ws and the kernel: echo the
// close frame, send FIN, then on the client's FIN end and close the socket.
// 15,000 clients closing at once kept one worker's loop busy for half a
// second, timers and every other client waiting. Here the answer to a close
// frame is queued instead (ws's own 'conclude' handler, called later with the
// same arguments) and at most BUDGET_MS of answers run per turn of the loop.
// The client's FIN answers our close frame, so the rest of each close comes
// paced the same way. A close is answered a few ms later at worst; nothing
// else about it changes.
import { performance } from 'node:perf_hooks';

const BUDGET_MS = 5;

export class ClosePacer {
  constructor(budgetMs = BUDGET_MS) {
    this.budgetMs = budgetMs;
    this.queue = []; // receiver, code, reason, receiver, code, reason, ...
    this.head = 0;
    this.turns = 0; // loop turns that answered closes: a test reads it
    this.wsOnConclude = undefined; // ws's handler, the same function for every connection
    const self = this;
    this.onConclude = function onConclude(code, reason) {
      self.defer(this, code, reason);
    };
    this.run = () => this.answer();
  }

  /** Takes over the close-frame handler of a connection ws has just set up. */
  watch(ws) {
    const receiver = ws._receiver;
    const handlers = receiver.listeners('conclude');
    if (handlers.length !== 1 || (this.wsOnConclude !== undefined && handlers[0] !== this.wsOnConclude)) return;
    this.wsOnConclude = handlers[0];
    receiver.removeListener('conclude', this.wsOnConclude);
    receiver.on('conclude', this.onConclude);
  }

  defer(receiver, code, reason) {
    if (this.queue.length === this.head) setImmediate(this.run);
    this.queue.push(receiver, code, reason);
  }

  /** Answers queued closes, oldest first, for at most the budget; the rest wait a turn. */
  answer() {
    const { queue } = this;
    const until = performance.now() + this.budgetMs;
    this.turns++;
    while (this.head < queue.length) {
      const receiver = queue[this.head];
      const code = queue[this.head + 1];
      const reason = queue[this.head + 2];
      queue[this.head] = queue[this.head + 2] = undefined;
      this.head += 3;
      // ws ignores the answer if the socket closed meanwhile.
      this.wsOnConclude.call(receiver, code, reason);
      if (performance.now() >= until) break;
    }
    if (this.head < queue.length) {
      setImmediate(this.run);
    } else {
      queue.length = 0;
      this.head = 0;
    }
  }
}
