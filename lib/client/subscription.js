// One channel the application listens to: its handlers, the promise that the
// first subscribe was accepted, and the last seq seen, which survives
// reconnects so a gap in the middle of an outage shows.

export class Subscription {
  constructor() {
    this.handlers = new Set();
    this.lastSeq = undefined;
    this.acked = false;
    this.ready = new Promise((resolve, reject) => {
      this.resolveReady = resolve;
      this.rejectReady = reject;
    });
  }

  accepted() {
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
}
