// Webhook delivery off the primary's event loop: the primary decides what
// happened (occupancy, members, a worker's client event) and hands each event
// once to the sender's thread (./thread.js), which fans it out to the
// targets that asked for it, batches, signs and sends. The primary hands
// connections over under --balance ip; however many targets, however slow,
// that costs it one message per event. Started at the first target.
import { Worker } from 'node:worker_threads';

const THREAD = new URL('./thread.js', import.meta.url);
const CLOSE_MS = 1000; // for the thread to close its connections

export class WebhookDelivery {
  /**
   * @param {object} options
   * @param {(result: string, events: number, app?: string) => void} options.count gateway_webhook_events_total
   * @param {import('pino').Logger} options.log where the thread's lines go
   */
  constructor({ count, log }) {
    this.count = count;
    this.log = log;
    this.worker = undefined;
    this.defined = new Map(); // key -> [app, targets]: told again to a thread started after a defect
    this.retiring = new Map(); // id -> resolve
    this.nextId = 0;
    this.onClosed = undefined;
  }

  /**
   * The targets of `key` (an app id, or the native webhook's), replacing
   * those it had (which send what they hold first).
   * @param {string} key
   * @param {string|undefined} app the metrics' and logs' app label
   * @param {(import('./send.js').WebhookTarget & {timeKey: string, events?: string[]})[]} targets
   *   timeKey: the body's time field; events: those it asked for (all when absent)
   */
  define(key, app, targets) {
    this.defined.set(key, [app, targets]);
    this.thread().postMessage(['define', key, app, targets]);
  }

  /** An event for the targets of `key` that asked for it. */
  event(key, event) {
    if (this.defined.has(key)) this.thread().postMessage(['event', key, event]);
  }

  /**
   * Starts the thread now, when targets are known to exist, so that the
   * first event does not wait for it to start.
   */
  warm() {
    this.thread();
  }

  /** Takes no more events for `key`; resolves once what its targets hold is sent (or given up). */
  retire(key) {
    if (!this.defined.delete(key) || this.worker === undefined) return Promise.resolve();
    const id = this.nextId++;
    this.worker.postMessage(['retire', key, id]);
    return new Promise((resolve) => this.retiring.set(id, resolve));
  }

  /** Stops the thread: what is still queued is dropped (retire first what should go). */
  async close() {
    if (this.worker === undefined) return;
    const worker = this.worker;
    this.worker = undefined;
    const closed = new Promise((resolve) => (this.onClosed = resolve));
    worker.postMessage(['close']);
    await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, CLOSE_MS).unref())]);
    await worker.terminate();
  }

  thread() {
    if (this.worker !== undefined) return this.worker;
    const worker = new Worker(THREAD);
    this.worker = worker;
    worker.on('message', (message) => this.received(message));
    worker.on('error', (err) => this.log.error({ err }, 'webhooks: the sender thread failed; a new one takes the targets'));
    worker.on('exit', () => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      for (const resolve of this.retiring.values()) resolve();
      this.retiring.clear();
      for (const [key, [app, targets]] of this.defined) this.thread().postMessage(['define', key, app, targets]);
    });
    return worker;
  }

  received([op, a, b, c]) {
    if (op === 'count') return this.count(a, b, c);
    if (op === 'log') return this.log[a](b, c);
    if (op === 'retired') {
      this.retiring.get(a)?.();
      this.retiring.delete(a);
    }
    if (op === 'closed') this.onClosed?.();
  }
}
