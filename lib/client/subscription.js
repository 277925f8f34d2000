// One channel the application listens to: its handlers, the promise that the
// first subscribe was accepted, and where the client stands in the channel
// (`epoch`, `lastSeq`), which survives reconnects: the resubscribe asks for
// what was missed since, and a message already handed over is never handed
// over again.

export class Subscription {
  /** @param {boolean} [delta] messages may come as deltas (./delta.js) */
  constructor(delta = false) {
    this.handlers = new Set();
    this.delta = delta;
    this.base = undefined; // with delta: the last message's text, the next delta's base
    this.epoch = undefined;
    this.lastSeq = undefined;
    this.acked = false;
    this.ready = new Promise((resolve, reject) => {
      this.resolveReady = resolve;
      this.rejectReady = reject;
    });
  }

  /** The `since` of a resubscribe, once the gateway has said where the channel stands. */
  get since() {
    return this.epoch === undefined ? undefined : { seq: this.lastSeq, epoch: this.epoch };
  }

  /**
   * Takes a subscribe's ack. After a resubscribe, `recovered: true` means the
   * missed messages follow; otherwise the client resumes from the ack's seq.
   */
  accepted({ seq, epoch }) {
    this.epoch = epoch;
    this.lastSeq = seq;
    if (this.acked) return;
    this.acked = true;
    this.resolveReady();
  }

  /**
   * Records `seq` and returns the seq that was due, when it is not `seq`
   * (messages were lost, or the gateway's sequence restarted).
   * @returns {number|undefined}
   */
  advance(seq) {
    const expected = this.lastSeq === undefined ? seq : this.lastSeq + 1;
    this.lastSeq = seq;
    return seq === expected ? undefined : expected;
  }

  /** Whether a message with this seq was handed over already (a replay overlapping the live stream). */
  seen(seq) {
    return this.lastSeq !== undefined && seq <= this.lastSeq;
  }
}
