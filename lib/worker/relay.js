// The worker's side of the publish path. Publishes go to the primary, which
// stamps the channel's next seq and sends them back to every worker with
// subscribers, this one included: the primary's order is the only order, so
// subscribers on all workers see a channel's messages in one seq order.
//
// Operations to the primary:  ['pub', channel, dataJson, token]  token 0 = no reply
//                             ['sub', channel, token]  first local subscriber
//                             ['unsub', channel]        last one left
//                             ['stats', figures]
// Operations from the primary: ['msg', channel, seq, dataJson]
//                             ['seq', token, seq]      reply to a pub with a token
//                             ['subok', token]         the primary now routes the channel here
//                             ['busy', boolean]        a worker is not keeping up: refuse publishes
// Other operations go to the module that registered them with handle()
// (lib/worker/users.js).
import { IpcBatch } from '../ipc.js';
import { messageFrame } from '../protocol.js';
import { encodeText, writeFrame } from './frames.js';
import { metrics } from './metrics.js';

export class WorkerRelay {
  /**
   * @param {object} options
   * @param {import('./subscriptions.js').Subscriptions} options.subscriptions
   * @param {number} options.maxBuffered
   */
  constructor({ subscriptions, maxBuffered }) {
    this.batch = new IpcBatch(process);
    this.subscriptions = subscriptions;
    this.maxBuffered = maxBuffered;
    this.nextToken = 1;
    this.replies = new Map(); // token -> resolve(seq) of an HTTP publish
    this.waiting = new Map(); // token -> {channel, callbacks} waiting for a subok
    this.waitingByChannel = new Map(); // channel -> token of its outstanding sub
    this.primaryBusy = false;
    this.handlers = new Map(); // op name -> handler(op), for operations owned by other modules
  }

  /** Routes operations named `name` from the primary to `handler(op)`. */
  handle(name, handler) {
    this.handlers.set(name, handler);
  }

  /** Publishes are refused while the relay is congested, here or in the primary. */
  get busy() {
    return this.primaryBusy || this.batch.congested;
  }

  publish(channel, dataJson) {
    metrics.published.inc();
    this.batch.push(['pub', channel, dataJson, 0]);
  }

  /** @returns {Promise<number>} the seq the primary gave the message */
  publishForSeq(channel, dataJson) {
    metrics.published.inc();
    const token = this.nextToken++;
    this.batch.push(['pub', channel, dataJson, token]);
    return new Promise((resolve) => this.replies.set(token, resolve));
  }

  /** Called by Subscriptions when a channel gets its first local subscriber. */
  channelOpened(channel) {
    const token = this.nextToken++;
    this.waiting.set(token, { channel, callbacks: [] });
    this.waitingByChannel.set(channel, token);
    this.batch.push(['sub', channel, token]);
  }

  /** Called by Subscriptions when the last local subscriber left. */
  channelClosed(channel) {
    this.waitingByChannel.delete(channel);
    this.batch.push(['unsub', channel]);
  }

  /**
   * Runs `callback` once the primary routes `channel` to this worker, so an
   * ack for a subscribe promises every later publish.
   */
  whenRouted(channel, callback) {
    const token = this.waitingByChannel.get(channel);
    if (token === undefined) callback();
    else this.waiting.get(token).callbacks.push(callback);
  }

  reportStats(figures) {
    this.batch.push(['stats', figures]);
  }

  /** Handles a batch of operations from the primary. */
  receive(ops) {
    for (const op of ops) {
      switch (op[0]) {
        case 'msg':
          this.deliver(op[1], op[2], op[3]);
          break;
        case 'seq':
          this.replies.get(op[1])?.(op[2]);
          this.replies.delete(op[1]);
          break;
        case 'subok':
          this.routed(op[1]);
          break;
        case 'busy':
          this.primaryBusy = op[1];
          break;
        default:
          this.handlers.get(op[0])?.(op);
      }
    }
  }

  deliver(channel, seq, dataJson) {
    const subscribers = this.subscriptions.subscribers(channel);
    if (subscribers === undefined) return;
    const frame = encodeText(messageFrame(channel, seq, dataJson));
    let delivered = 0;
    for (const ws of subscribers) if (writeFrame(ws, frame, this.maxBuffered)) delivered++;
    metrics.delivered.inc(delivered);
  }

  routed(token) {
    const waiting = this.waiting.get(token);
    if (waiting === undefined) return;
    this.waiting.delete(token);
    if (this.waitingByChannel.get(waiting.channel) === token) this.waitingByChannel.delete(waiting.channel);
    for (const callback of waiting.callbacks) callback();
  }
}
