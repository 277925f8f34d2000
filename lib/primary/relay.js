// The primary's side of the publish path: the IPC with the workers. Every
// publish goes to the engine (lib/engines/), which gives it its
// channel's next seq and forwards it to the workers that have subscribers on
// the channel. One sequencer per channel is what makes one order for all
// subscribers; batching (lib/ipc.js) is what makes it fast.
//
// Backpressure: when a worker stops keeping up (its channel congested), or
// the engine has too many publishes waiting, the primary tells every worker
// it is busy, and they refuse publishes until it is not, instead of the
// primary queueing without bound. An engine that cannot publish at all (Redis
// unreachable) is broadcast too: the workers refuse publishes as unavailable.
//
// The operations are listed in lib/worker/relay.js.
import { IpcBatch, Op, unknownOp } from '../ipc.js';
import { Ticker } from '../ticker.js';

const PRESSURE_CHECK_MS = 20;

export class PrimaryRelay {
  /**
   * @param {object} options
   * @param {import('../engines/index.js').Engine} options.engine
   * @param {(count: number) => void} options.onPublish
   * @param {() => void} [options.onStats] a worker reported its figures (in `figures`)
   */
  constructor({ engine, onPublish, onStats }) {
    this.engine = engine;
    this.onStats = onStats;
    this.links = new Map(); // cluster worker id -> link
    this.figures = new Map(); // cluster worker id -> last stats the worker reported
    this.onPublish = onPublish;
    this.busy = false;
    this.engineUp = engine.available;
    this.handlers = new Map(); // Op -> handler(link, op), for operations owned by other modules
    this.detachHandlers = []; // handler(link) for a link that is gone
    this.attachHandlers = []; // handler(link) for a worker that has just come up
    this.traffic = false; // operations received since the last check
    this.pressure = new Ticker('pressure', PRESSURE_CHECK_MS, () => this.checkPressure());
    this.pressure.start();
  }

  /** Routes operations named `name` (an Op) from a worker to `handler(link, op)` (lib/primary/users.js). */
  handle(name, handler) {
    this.handlers.set(name, handler);
  }

  /** Calls `handler(link)` when a worker has just come up (what it must be told first goes in its first batch). */
  onAttach(handler) {
    this.attachHandlers.push(handler);
  }

  /** Calls `handler(link)` when a worker's link is gone. */
  onDetach(handler) {
    this.detachHandlers.push(handler);
  }

  /**
   * Tells the workers when the engine or a link gets congested, or the
   * engine goes down or up. @returns {boolean} whether to look again: while
   * anything could still change, which with a steady engine (./engines)
   * takes traffic or operations still in flight to a worker.
   */
  checkPressure() {
    let busy = this.engine.congested;
    let inFlight = false;
    for (const link of this.links.values()) {
      busy ||= link.batch.congested;
      inFlight ||= link.batch.inFlight > 0;
    }
    if (busy !== this.busy) {
      this.busy = busy;
      this.broadcast([Op.BUSY, busy]);
    }
    const up = this.engine.available;
    if (up !== this.engineUp) {
      this.engineUp = up;
      this.broadcast([Op.ENGINE, up]);
    }
    const traffic = this.traffic;
    this.traffic = false;
    return busy || !up || this.engine.steady !== true || traffic || inFlight;
  }

  /** Starts relaying for a worker that has just come up. */
  attach(worker) {
    const link = new WorkerLink(worker);
    this.links.set(worker.id, link);
    if (this.busy) link.send([Op.BUSY, true]);
    if (!this.engineUp) link.send([Op.ENGINE, false]);
    for (const handler of this.attachHandlers) handler(link);
  }

  /** Forgets a worker that is gone: no more routing to it. */
  detach(worker) {
    const link = this.links.get(worker.id);
    if (link === undefined) return;
    this.engine.detach(link.batch);
    this.links.delete(worker.id);
    for (const handler of this.detachHandlers) handler(link);
    this.figures.delete(worker.id);
  }

  receive(worker, ops) {
    const link = this.links.get(worker.id);
    if (link === undefined) return;
    this.traffic = true;
    this.pressure.start();
    let published = 0;
    for (const op of ops) {
      switch (op[0]) {
        case Op.PUB: {
          // The hot path. Its one allocation is the publication (four
          // fields, dead by the end of the call: the young generation takes
          // it back for almost nothing; scripts/bench-relay.js measures the
          // primary's CPU per publish). One function answers every publish
          // (the link and token travel as `a` and `b`), so no closure per
          // publish, and token 0 wants no reply, so no result is made. A
          // key or version left out travels as null (IPC is JSON).
          const token = op[3];
          const publication = { channel: op[1], data: op[2], idempotencyKey: op[4] ?? undefined, version: op[5] ?? undefined };
          if (token === 0) this.engine.publish(publication);
          else this.engine.publish(publication, answerPublish, link, token);
          published++;
          break;
        }
        case Op.HISTORY: {
          const token = op[3];
          this.engine.history(op[1], op[2], (answer) => link.send([Op.HISTORY_DONE, token, answer]));
          break;
        }
        case Op.SUB: {
          const since = op[3] === undefined ? undefined : { seq: op[3], epoch: op[4] };
          const token = op[2];
          this.engine.subscribe(op[1], link.batch, since, ({ epoch, seq, result, replay }) => {
            link.send([Op.SUBOK, token, epoch, seq, result, replay]);
          });
          break;
        }
        case Op.UNSUB:
          this.engine.unsubscribe(op[1], link.batch);
          break;
        case Op.STATS:
          this.figures.set(worker.id, op[1]);
          this.onStats?.();
          break;
        default: {
          const handler = this.handlers.get(op[0]);
          if (handler === undefined) throw unknownOp(op);
          handler(link, op);
        }
      }
    }
    if (published > 0) this.onPublish(published);
  }

  /** Sends an operation to every attached worker. */
  broadcast(op) {
    for (const link of this.links.values()) link.send(op);
  }
}

/**
 * The engine stored a publish (a result), or did not (null): the worker that asked is told, in its next batch.
 * @param {import('../engines/publication.js').PublishResult | null} result
 */
function answerPublish(result, link, token) {
  if (result === null) link.send([Op.SEQ, token, null, undefined, undefined]);
  else link.send([Op.SEQ, token, result.seq, result.epoch, result.skipped]);
}

/**
 * One worker's end of the IPC, as the primary's modules see it: `send(op)`
 * queues an operation for the worker's next batch. The batch itself is the
 * route the engine delivers the worker's channels to.
 */
class WorkerLink {
  constructor(worker) {
    this.batch = new IpcBatch(worker);
  }

  /** Queues `op` (an Op and its fields) for the worker, in this turn's batch. */
  send(op) {
    this.batch.push(op);
  }
}
