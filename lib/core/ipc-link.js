// One end of the IPC between the primary and a worker, the same on both
// sides. `send(op)` queues an operation for this turn's batch (./ipc.js).
// A question is an operation whose first field is a token: `ask(name,
// ...fields)` sends one and settles with the other side's reply, which is
// [Op.ANSWER, token, value], or [Op.FAILED, token, code, message] for an
// error of the family, thrown here as a GatewayError: one correlation map for
// every question, and a failure is an error wherever it was decided.
import { ErrorCode, GatewayError } from './errors.js';
import { IpcBatch, Op } from './ipc.js';

/**
 * Who waits for a reply: called in the turn the reply arrives, in order with
 * the operations around it in its batch (a promise's resolve defers the rest
 * to a microtask; a subscribe's waiter must not).
 * @typedef {{resolve: (value: any) => void, reject: (err: GatewayError) => void}} Waiter
 */

export class IpcLink {
  /** @param {{send: Function}} target a cluster Worker in the primary, `process` in a worker */
  constructor(target) {
    this.batch = new IpcBatch(target);
    this.waiting = new Map(); // token -> Waiter
    this.nextToken = 1;
  }

  /** Queues `op` (an Op and its fields) for this turn's batch. */
  send(op) {
    this.batch.push(op);
  }

  /** Queues `op` to leave with the next batch or soon after (IpcBatch.pushLater): an operation nobody waits for. */
  sendLater(op) {
    this.batch.pushLater(op);
  }

  /** @returns {Promise<any>} the reply to [name, token, ...fields] */
  ask(name, ...fields) {
    return new Promise((resolve, reject) => this.expect([name, 0, ...fields], { resolve, reject }));
  }

  /**
   * ask(), given up after `ms`: the question fails as unavailable and its
   * waiter goes with it, so a side that never answers holds nothing here
   * (a reply that comes later finds nobody waiting).
   * @returns {Promise<any>}
   */
  askWithin(ms, name, ...fields) {
    return new Promise((resolve, reject) => {
      const token = this.expect([name, 0, ...fields], {
        resolve(value) {
          clearTimeout(timer);
          resolve(value);
        },
        reject(err) {
          clearTimeout(timer);
          reject(err);
        }
      });
      const timer = setTimeout(() => {
        this.waiting.delete(token);
        reject(new GatewayError(ErrorCode.UNAVAILABLE, `no answer within ${ms / 1000} s`));
      }, ms);
    });
  }

  /** Sends `op` with a token in its first field; `waiter` gets the reply. @returns {number} the token */
  expect(op, waiter) {
    const token = this.nextToken++;
    op[1] = token;
    this.waiting.set(token, waiter);
    this.send(op);
    return token;
  }

  /** Replies `value` to the question `token` (0: nobody waits). */
  answer(token, value) {
    if (token !== 0) this.send([Op.ANSWER, token, value]);
  }

  /** Replies a failure to the question `token`: `err` is a GatewayError. */
  fail(token, err) {
    if (token !== 0) this.send([Op.FAILED, token, err.code, err.message]);
  }

  /** Replies with what `promise` settles to: a GatewayError as a failure; anything else it throws is a defect, thrown. */
  reply(token, promise) {
    promise.then(
      (value) => this.answer(token, value),
      (err) => {
        if (!(err instanceof GatewayError)) throw err;
        this.fail(token, err);
      }
    );
  }

  /** An Op.ANSWER or Op.FAILED from the other side. */
  settle([name, token, value, message]) {
    const waiter = this.waiting.get(token);
    if (waiter === undefined) return;
    this.waiting.delete(token);
    if (name === Op.ANSWER) waiter.resolve(value);
    else waiter.reject(new GatewayError(value, message));
  }

  /** The other side is gone: every question still waiting fails as unavailable. */
  close(message) {
    const waiters = [...this.waiting.values()];
    this.waiting.clear();
    for (const waiter of waiters) waiter.reject(new GatewayError(ErrorCode.UNAVAILABLE, message));
  }
}
