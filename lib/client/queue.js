// Publishes made while disconnected wait here, up to a bound, and go out in
// order once the connection is back. The bound keeps a long outage from
// turning into unbounded memory and a burst on reconnect.
import { ClientError, ClientErrorCode } from '../client/errors.js';

export class PublishQueue {
  /** @param {number} max entries that may wait; the next one is rejected with queue_full */
  constructor(max) {
    this.max = max;
    this.entries = [];
  }

  get size() {
    return this.entries.length;
  }

  /**
   * Queues `frame`; the returned promise settles when the caller passes the
   * entry's resolve/reject on (see take()).
   * @returns {Promise<*>}
   */
  add(frame) {
    if (this.entries.length >= this.max) {
      return Promise.reject(new ClientError(ClientErrorCode.QUEUE_FULL, `${this.max} publishes already wait for the connection`));
    }
    return new Promise((resolve, reject) => this.entries.push({ frame, resolve, reject }));
  }

  /** Removes and returns every waiting entry, oldest first. */
  take() {
    const entries = this.entries;
    this.entries = [];
    return entries;
  }

  rejectAll(error) {
    for (const entry of this.take()) entry.reject(error);
  }
}
