// The webhook queue: events in the order they happened, out in batches, one
// batch at a time.
// - A batch holds at most MAX_BATCH events and waits at most BATCH_MS after
//   its first event: a burst becomes a few requests, a lone event goes at once.
// - Order: the next batch leaves only once the one before it was answered 2xx
//   or given up, so a batch being retried holds back the later ones.
// - A failed attempt is retried after RETRY_FIRST_MS, doubling up to
//   RETRY_MAX_MS (each with ±20% jitter), until RETRY_WINDOW_MS after its
//   oldest event happened (and at least once): then it is dropped, and
//   counted. So no event arrives more than about RETRY_WINDOW_MS late, and a
//   backlog behind a long outage goes at a retry's pace, not 5 minutes a batch.
// - Behind a batch being retried at most MAX_WAITING events wait; more are
//   dropped as they come (counted), never the ones already queued. The first
//   dropped is logged, and how many were once the endpoint takes a batch
//   again (or the batch is given up).
// Each event is counted once by its outcome, `sent` or `dropped`; `retried`
// counts the events of every failed attempt (a batch failing three times
// counts its events three times).

export const MAX_BATCH = 100;
const BATCH_MS = 50;
const RETRY_FIRST_MS = 1000;
const RETRY_MAX_MS = 10000;
const RETRY_WINDOW_MS = 5 * 60 * 1000;
const MAX_WAITING = 10000; // per target: a bound on what an endpoint that fails costs the sender's memory

/** The labels of gateway_webhook_events_total{result}. */
export const Result = Object.freeze({ SENT: 'sent', RETRIED: 'retried', DROPPED: 'dropped' });

export class WebhookQueue {
  /**
   * @param {object} options
   * @param {(body: string) => Promise<void>} options.post sends one body; rejects if it was not taken
   * @param {(result: string, events: number) => void} options.count
   * @param {import('pino').Logger} options.log
   * @param {(timeMs: number, events: object[]) => string} [options.format] a batch's body (another protocol's format)
   * @param {number} [options.maxWaiting] MAX_WAITING; a test sets a smaller one
   */
  constructor({ post, count, log, format = nativeBody, maxWaiting = MAX_WAITING }) {
    this.post = post;
    this.maxWaiting = maxWaiting;
    this.format = format;
    this.count = count;
    this.log = log;
    this.waiting = []; // events not yet in a batch, oldest first
    this.queuedAt = []; // when each came (ms)
    this.batch = undefined; // the batch in flight or waiting for its retry
    this.timer = undefined; // the BATCH_MS wait, or the retry's
    this.dropping = 0; // events dropped since the queue last had room
    this.stopped = false;
    this.emptied = []; // resolvers of whenEmpty()
  }

  /** @param {{name: string, channel: string, user?: string}} event */
  add(event) {
    if (this.waiting.length >= this.maxWaiting) {
      this.count(Result.DROPPED, 1);
      if (this.dropping++ === 0) this.log.warn({ waiting: this.maxWaiting }, 'webhooks: too many events waiting behind a failing endpoint; new ones are dropped');
      return;
    }
    this.waiting.push(event);
    this.queuedAt.push(Date.now());
    if (this.batch === undefined) this.schedule();
  }

  /** Events queued or in flight. */
  get size() {
    return this.waiting.length + (this.batch?.events ?? 0);
  }

  /** Resolves once nothing is queued or in flight. */
  whenEmpty() {
    if (this.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.emptied.push(resolve));
  }

  /** No more attempts (the gateway is exiting). */
  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** With no batch out: the next one now if it is full or old enough, else when it will be. */
  schedule() {
    if (this.waiting.length === 0 || this.stopped) return;
    const age = Date.now() - this.queuedAt[0];
    if (this.waiting.length >= MAX_BATCH || age >= BATCH_MS) {
      clearTimeout(this.timer);
      this.timer = undefined;
      this.next();
    } else if (this.timer === undefined) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.schedule();
      }, BATCH_MS - age);
    }
  }

  next() {
    const events = this.waiting.splice(0, MAX_BATCH);
    const oldestAt = this.queuedAt.splice(0, MAX_BATCH)[0];
    const now = Date.now();
    this.batch = { body: this.format(now, events), events: events.length, oldestAt, attempts: 0 };
    this.attempt();
  }

  attempt() {
    const batch = this.batch;
    batch.attempts++;
    this.post(batch.body).then(
      () => this.done(Result.SENT),
      (err) => this.failed(batch, err)
    );
  }

  failed(batch, err) {
    const delay = Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** (batch.attempts - 1)) * (0.8 + Math.random() * 0.4);
    const elapsed = Date.now() - batch.oldestAt;
    if (batch.attempts > 1 && elapsed + delay > RETRY_WINDOW_MS) {
      this.log.error({ err: err.message, events: batch.events, attempts: batch.attempts }, 'webhooks: endpoint still failing 5 minutes after the events: batch dropped');
      return this.done(Result.DROPPED);
    }
    if (batch.attempts === 1) this.log.warn({ err: err.message, events: batch.events }, 'webhooks: attempt failed; retrying with backoff');
    this.count(Result.RETRIED, batch.events);
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.attempt();
    }, delay);
  }

  done(result) {
    if (result === Result.SENT && this.batch.attempts > 1) this.log.info({ attempts: this.batch.attempts }, 'webhooks: endpoint back, batch sent');
    this.count(result, this.batch.events);
    this.batch = undefined;
    if (this.dropping > 0) this.log.warn({ dropped: this.dropping }, `webhooks: ${this.dropping} events were dropped while the endpoint failed`);
    this.dropping = 0;
    this.schedule();
    if (this.size === 0) for (const resolve of this.emptied.splice(0)) resolve();
  }
}

function nativeBody(timeMs, events) {
  return JSON.stringify({ timeMs, events });
}
