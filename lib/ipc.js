// The IPC between the primary and its workers. Batches operations between the primary and a worker: operations queued
// during one tick leave in a single `send`, which is what makes the relay fast
// (one message per publish spends its time in the IPC channel, not in the relay).
//
// An operation is a small array whose first item names it; see lib/primary/relay.js
// and lib/worker/relay.js for the ones in use.

/** IPC message types between the primary and its workers. */
export const Message = Object.freeze({
  SOCKET: 'sticky:balance', // sticky-session's hand-over message, with the socket
  READY: 'gateway:ready',
  BATCH: 'gateway:batch',
  DRAIN: 'gateway:drain'
});

/** Workers report their figures, and the primary sends the cluster's, this often. */
export const STATS_INTERVAL_MS = 1000;

export class IpcBatch {
  /** @param {{send: Function}} target a cluster Worker or `process` in a worker */
  constructor(target) {
    this.target = target;
    this.ops = [];
    this.flush = this.flush.bind(this);
  }

  push(op) {
    if (this.ops.length === 0) setImmediate(this.flush);
    this.ops.push(op);
  }

  flush() {
    if (this.ops.length === 0) return;
    const ops = this.ops;
    this.ops = [];
    // A worker that is gone or going cannot take more; its clients are gone with it.
    if (this.target.isConnected?.() === false || this.target.connected === false) return;
    this.target.send({ type: Message.BATCH, ops }, undefined, undefined, ignoreError);
  }
}

function ignoreError() {}
