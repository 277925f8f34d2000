// At most `concurrency` tasks running at once, the others waiting in a FIFO
// queue of at most `queueSize`; past it a task is refused at once. This is
// what turns a reconnect storm into a bounded rate on the backend: a worker
// never has more than `concurrency` requests in flight, and a client never
// waits behind more than `queueSize` others.

/** run() resolves this when the queue is full: the task never ran. */
export const QUEUE_FULL = Symbol('queueFull');

export class Limiter {
  /**
   * @param {number} concurrency tasks running at once
   * @param {number} queueSize tasks waiting at most
   */
  constructor(concurrency, queueSize) {
    this.concurrency = concurrency;
    this.queueSize = queueSize;
    this.running = 0;
    this.queue = []; // [task, resolve], oldest first; read from `head` so a shift costs nothing
    this.head = 0;
  }

  /** Tasks waiting. */
  get waiting() {
    return this.queue.length - this.head;
  }

  /**
   * @template T
   * @param {() => Promise<T>} task must not reject
   * @returns {Promise<T|typeof QUEUE_FULL>}
   */
  run(task) {
    if (this.running < this.concurrency) return this.start(task);
    if (this.waiting >= this.queueSize) return Promise.resolve(QUEUE_FULL);
    return new Promise((resolve) => this.queue.push([task, resolve]));
  }

  start(task) {
    this.running++;
    return task().finally(() => {
      this.running--;
      this.next();
    });
  }

  next() {
    if (this.waiting === 0) return;
    const [task, resolve] = this.queue[this.head];
    this.queue[this.head++] = undefined;
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    resolve(this.start(task));
  }
}
