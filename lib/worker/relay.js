// The worker's end of the IPC with the primary (../ipc-link.js), and the
// publish path through it. Publishes go to the primary, which stamps the
// channel's next seq and sends them back to every worker with subscribers,
// this one included: the primary's order is the only order, so subscribers
// on all workers see a channel's messages in one seq order.
//
// Subscribing joins a replay to the live messages exactly: a subscribe the
// worker cannot answer itself goes to the primary, which routes the channel
// here and replies with the channel's seq (and the missed messages) at that
// moment; the primary's operations reach this worker in order, so every MSG
// after that reply is newer than it, every one before it older. The
// subscriber is pending until the reply, live from it on.
//
// The operations and their fields are listed in ../ipc.js. Operations this
// module does not own go to the module that registered them with handle()
// (../session/users.js, ../session/calls.js, ...).
import { Op, unknownOp } from '../core/ipc.js';
import { IpcLink } from '../core/ipc-link.js';
import { FanOut } from '../session/fan-out.js';
import { countPublished, metrics } from '../session/metrics.js';

export class WorkerRelay {
  /**
   * @param {object} options
   * @param {import('../session/subscriptions.js').Subscriptions} options.subscriptions
   * @param {number} options.maxBuffered
   */
  /**
   * @param {object} options
   * @param {import('../session/subscriptions.js').Subscriptions} options.subscriptions
   * @param {number} options.maxBuffered --max-buffered
   * @param {import('../transport/coalesce.js').WriteCoalescer} options.coalescer the worker's: a batch of several messages is fanned out within batch()
   */
  constructor({ subscriptions, maxBuffered, coalescer }) {
    this.link = new IpcLink(process);
    this.coalescer = coalescer;
    this.subscriptions = subscriptions;
    this.fanOut = new FanOut({ subscriptions, maxBuffered });
    this.primaryBusy = false;
    this.engineUp = true;
    this.handlers = new Map(); // op name -> handler(op), for operations owned by other modules
  }

  /** Sends `op` to the primary with the rest of this turn's operations. */
  send(op) {
    this.link.send(op);
  }

  /** Sends `op` with the next batch, or within a few ms: an operation nobody waits for and no limit reads at once. */
  sendLater(op) {
    this.link.sendLater(op);
  }

  /** Sends what is batched now (a worker about to disconnect). */
  flush() {
    this.link.batch.flush();
  }

  /** Routes operations named `name` from the primary to `handler(op)`. */
  handle(name, handler) {
    this.handlers.set(name, handler);
  }

  /** @returns {Promise<any>} the primary's reply to [name, token, ...fields]; a failure is a GatewayError */
  ask(name, ...fields) {
    return this.link.ask(name, ...fields);
  }

  /** Questions named `name` from the primary, [name, token, ...fields], are replied what `run(...fields)` returns or resolves to. */
  answers(name, run) {
    this.handle(name, ([, token, ...fields]) => this.link.reply(token, Promise.resolve(run(...fields))));
  }

  /** @returns {Promise<any>} the value of a Call (../ipc.js) on the whole cluster */
  call(name, args) {
    return this.ask(Op.CALL, name, args);
  }

  /** Publishes are refused while the relay is congested, here or in the primary. */
  get busy() {
    return this.primaryBusy || this.link.batch.congested;
  }

  /** Publishes are refused while the engine cannot publish (Redis unreachable). */
  get unavailable() {
    return !this.engineUp;
  }

  /**
   * A publish, from a client or the server: settles once the engine has
   * stored it (an acknowledgement means stored: a promise no worker's death
   * breaks) or skipped it; rejects with `unavailable` when it was not stored.
   * @param {import('../core/seams.js').Publication} publication
   * @returns {Promise<import('../core/seams.js').PublishResult>}
   */
  publish({ channel, data, exclude, idempotencyKey, version }) {
    // The fields nobody set are left off the end: a plain publish crosses the IPC as four.
    const op = exclude === undefined && idempotencyKey === undefined && version === undefined ? [Op.PUB, 0, channel, data] : [Op.PUB, 0, channel, data, exclude, idempotencyKey, version];
    return new Promise((resolve, reject) => this.link.expect(op, new Published(channel, resolve, reject)));
  }

  /** @returns {Promise<import('../engines/index.js').HistoryAnswer>} */
  history(channel, query) {
    return this.ask(Op.HISTORY, channel, query);
  }

  /**
   * Asks the primary to route `channel` here and to say where it stands
   * (with `since`: what was missed); `to.routed(request, answer)` gets the
   * reply in its turn, in order with the channel's messages, and
   * `to.refused(request, err)` a refusal (only a join under a cap of members
   * can be refused).
   * @param {import('../core/seams.js').JoinRequest} request
   * @param {{routed: Function, refused: Function}} to who asked (../session/sessions.js)
   */
  subscribe(request, to) {
    const { channel, since, presence } = request;
    if (presence !== undefined) {
      // Admitted under the cap, the members read and the channel routed: one question (../primary/presence.js).
      const { client, member, maxUsers } = presence;
      return this.link.expect([Op.PRESENCE_SUBSCRIBE, 0, channel, client, member, maxUsers], {
        resolve: (reply) => (reply === null ? undefined : this.routed(request, reply, to)),
        reject: (err) => to.refused(request, err)
      });
    }
    this.link.expect(since === undefined ? [Op.SUB, 0, channel] : [Op.SUB, 0, channel, since.seq, since.epoch], {
      resolve: (reply) => this.routed(request, reply, to),
      reject: (err) => {
        throw err; // the primary answers every subscribe: a failure here is a defect
      }
    });
  }

  /** Called by Subscriptions when the last local holder of a channel left. */
  channelClosed(channel) {
    this.send([Op.UNSUB, channel]);
  }

  reportStats(figures) {
    this.send([Op.STATS, figures]);
  }

  /** Handles a batch of operations from the primary. */
  receive(ops) {
    // Several messages in one batch may reach a connection several times:
    // their writes wait for the end of the turn, one write for all; a lone
    // message goes straight out (../transport/coalesce.js).
    this.coalescer.batch(severalMessages(ops), () => this.dispatch(ops));
  }

  dispatch(ops) {
    for (const op of ops) {
      switch (op[0]) {
        case Op.MSG:
          this.fanOut.deliver(op[1], op[2], op[3], op[4] ?? undefined); // IPC is JSON: an absent exclude may arrive as null
          break;
        case Op.ANSWER:
        case Op.FAILED:
          this.link.settle(op);
          break;
        case Op.BUSY:
          this.primaryBusy = op[1];
          break;
        case Op.ENGINE:
          this.engineUp = op[1];
          break;
        case Op.EPOCH:
          this.subscriptions.local(op[1])?.restart(op[2]);
          break;
        default:
          if (!this.handlers.has(op[0])) throw unknownOp(op);
          this.handlers.get(op[0])(op);
      }
    }
  }

  /** The primary's reply to a subscribe. */
  routed(request, { epoch, seq, result, replay, clients }, to) {
    const { local } = request;
    // A record dropped (and perhaps made anew) since the request is stale:
    // the primary may stop routing to it any moment.
    const current = this.subscriptions.local(request.channel) === local;
    if (current) local.route(epoch, seq);
    to.routed(request, { current, epoch, seq, result: result ?? undefined, replay: replay ?? undefined, clients });
  }
}

/** A publish waiting for its reply: counted once answered (published, or skipped and why). */
class Published {
  constructor(channel, resolve, reject) {
    this.channel = channel;
    this.settle = resolve;
    this.refuse = reject;
  }

  /** @param {import('../core/seams.js').PublishResult} result */
  resolve({ seq, epoch, skipped }) {
    if (skipped == null) countPublished(this.channel); // null: as IPC carries undefined
    else metrics.skipped.inc({ reason: skipped });
    this.settle(skipped == null ? { seq, epoch } : { skipped, seq, epoch });
  }

  reject(err) {
    this.refuse(err);
  }
}

/** Whether the batch holds more than one message: looked for only until the second is found. */
function severalMessages(ops) {
  let seen = false;
  for (const op of ops) {
    if (op[0] !== Op.MSG) continue;
    if (seen) return true;
    seen = true;
  }
  return false;
}
