// The primary's side of the publish path: the IPC with the workers. Every
// publish goes to the engine (lib/engines/), which gives it its
// channel's next seq and forwards it to the workers that have subscribers on
// the channel. One sequencer per channel is what makes one order for all
// subscribers; batching (lib/core/ipc.js) is what makes it fast.
//
// Backpressure: when a worker stops keeping up (its channel congested), or
// the engine has too many publishes waiting, the primary tells every worker
// it is busy, and they refuse publishes until it is not, instead of the
// primary queueing without bound. An engine that cannot publish at all (Redis
// unreachable) is broadcast too: the workers refuse publishes as unavailable.
//
// The operations are listed in lib/core/ipc.js; each worker's end of the IPC is
// an IpcLink (lib/core/ipc-link.js), as the worker's end of it is.
import { Op, unknownOp } from '../core/ipc.js';
import { IpcLink } from '../core/ipc-link.js';
import { ErrorCode, GatewayError } from '../core/errors.js';
import { Ticker } from '../runtime/ticker.js';

const PRESSURE_CHECK_MS = 20;

const NOT_STORED_MESSAGE =
  'not stored: Redis failed it, or its replicas did not confirm in time; it may have been published, so retry with the same idempotencyKey';

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
    const link = new IpcLink(worker);
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
    link.close('the worker asked went away before answering: retry');
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
          // The hot path. Its allocations are the publication (dead by the
          // end of the call: the young generation takes it back for almost
          // nothing; scripts/bench-relay.js measures the primary's CPU per
          // publish) and, when the worker waits for the reply, the reply. A
          // field left out travels as null (IPC is JSON).
          const token = op[1];
          const publication = { channel: op[2], data: op[3], exclude: op[4] ?? undefined, idempotencyKey: op[5] ?? undefined, version: op[6] ?? undefined };
          this.engine.publish(publication, token === 0 ? undefined : new PublishReply(link, token));
          published++;
          break;
        }
        case Op.HISTORY: {
          const [, token, channel, query] = op;
          this.engine.history(channel, query, (answer) => replyResult(link, token, answer));
          break;
        }
        case Op.SUB: {
          const [, token, channel, sinceSeq, sinceEpoch] = op;
          const since = sinceSeq === undefined ? undefined : { seq: sinceSeq, epoch: sinceEpoch };
          this.engine.subscribe(channel, link.batch, since, (reply) => link.answer(token, reply));
          break;
        }
        case Op.ANSWER:
        case Op.FAILED:
          link.settle(op);
          break;
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

/** Who waits for a publish's result: the worker that asked, told in its next batch; not stored is a failure. */
class PublishReply {
  constructor(link, token) {
    this.link = link;
    this.token = token;
  }

  /** @param {import('../core/seams.js').PublishResult | null} result */
  answered(result) {
    if (result === null) this.link.fail(this.token, new GatewayError(ErrorCode.UNAVAILABLE, NOT_STORED_MESSAGE));
    else this.link.answer(this.token, result);
  }
}

/**
 * Replies with an engine's answer that may be a refusal (a GatewayError: a
 * history read's too_old, presence's too_many, Redis unreachable): sent as a
 * failure, so the worker that asked throws it as the same error.
 */
export function replyResult(link, token, answer) {
  if (answer instanceof GatewayError) link.fail(token, answer);
  else link.answer(token, answer);
}
