// The worker's side of the publish path. Publishes go to the primary, which
// stamps the channel's next seq and sends them back to every worker with
// subscribers, this one included: the primary's order is the only order, so
// subscribers on all workers see a channel's messages in one seq order.
//
// Subscribing joins a replay to the live messages exactly: a subscribe the
// worker cannot answer itself goes to the primary, which routes the channel
// here and answers with the channel's seq (and the missed messages) at that
// moment; the primary's operations reach this worker in order, so every
// 'msg' after that answer is newer than it, every one before it older. The
// subscriber is pending until the answer, live from it on.
//
// Operations to the primary:  ['pub', channel, dataJson, token, idempotencyKey?, version?]  token 0 = no reply
//                             ['sub', channel, token, sinceSeq?, sinceEpoch?]
//                             ['hist', channel, query, token]  the server API's history read
//                             ['unsub', channel]        the last local holder left
//                             ['stats', figures]
// Operations from the primary: ['msg', channel, seq, dataJson]
//                             ['seq', token, seq, epoch, skipped]  reply to a pub, once the
//                               engine stored it or skipped it (seq null: refused or failed)
//                             ['histd', token, answer] reply to a hist
//                             ['subok', token, epoch, seq, result, replay]  reply to a sub:
//                               the channel is routed here; result and replay only with since
//                             ['busy', boolean]        a worker is not keeping up: refuse publishes
//                             ['engine', boolean]      whether the engine (Redis) can publish
//                             ['epoch', channel, epoch]  the channel's sequence started over
//                               (Redis lost it): the next 'msg' counts from 1
// Other operations go to the module that registered them with handle()
// (../session/users.js, ../session/calls.js).
import { IpcBatch, Op, unknownOp } from '../ipc.js';
import { ErrorCode, GatewayError } from '../errors.js';
import { errorFrame, publishAckFrame } from '../protocol/frames.js';
import { TRANSPORTS } from '../transport/transport.js';
import { kTransport } from '../core/symbols.js';
import { countDelivered, countPublished, metrics } from '../session/metrics.js';
import { coalescer } from '../transport/coalesce.js';

const NOT_STORED_MESSAGE =
  'not stored: Redis failed it, or its replicas did not confirm in time; it may have been published, so retry with the same idempotencyKey';

export class WorkerRelay {
  /**
   * @param {object} options
   * @param {import('../session/subscriptions.js').Subscriptions} options.subscriptions
   * @param {number} options.maxBuffered
   */
  constructor({ subscriptions, maxBuffered }) {
    this.batch = new IpcBatch(process);
    this.subscriptions = subscriptions;
    this.maxBuffered = maxBuffered;
    this.encoded = new Array(TRANSPORTS.length); // one message's encoding per transport, reused
    this.nextToken = 1;
    this.replies = new Map(); // token -> {resolve, reject, channel} of an HTTP publish
    this.acking = new Map(); // token -> [ws, id] of a WebSocket publish
    this.subscribing = new Map(); // token -> a join request waiting for a subok
    this.onRouted = undefined; // (request, answer) => void: the sessions' (../session/sessions.js)
    this.asked = new Map(); // token -> resolve of an ask()
    this.primaryBusy = false;
    this.engineUp = true;
    this.handlers = new Map(); // op name -> handler(op), for operations owned by other modules
    this.answers(Op.HISTORY_DONE);
  }

  /** Sends `op` to the primary with the rest of this turn's operations: the one way onto the IPC batch. */
  send(op) {
    this.batch.push(op);
  }

  /** Sends what is batched now (a worker about to disconnect). */
  flush() {
    this.batch.flush();
  }

  /** Routes operations named `name` from the primary to `handler(op)`. */
  handle(name, handler) {
    this.handlers.set(name, handler);
  }

  /**
   * Sends `op` with a token appended; the primary answers with an operation
   * routed here by answers(), and the promise resolves with its value.
   */
  ask(op) {
    const token = this.nextToken++;
    this.send([...op, token]);
    return new Promise((resolve) => this.asked.set(token, resolve));
  }

  /** @returns {Promise<any>} the value of a Call (../ipc.js) on the whole cluster */
  call(name, args) {
    return this.ask([Op.CALL, name, args]);
  }

  /** Operations named `name` answer an ask(): [name, token, value]. */
  answers(name) {
    this.handle(name, ([, token, value]) => {
      this.asked.get(token)?.(value);
      this.asked.delete(token);
    });
  }

  /** Publishes are refused while the relay is congested, here or in the primary. */
  get busy() {
    return this.primaryBusy || this.batch.congested;
  }

  /** Publishes are refused while the engine cannot publish (Redis unreachable). */
  get unavailable() {
    return !this.engineUp;
  }

  /**
   * A WebSocket client's publish: acknowledged with `id`, its seq and epoch
   * once the engine has stored it (the primary's 'seq' reply, batched with
   * the others of its turn). Stored is a promise no worker's death breaks.
   */
  publish(channel, dataJson, ws, id) {
    countPublished(channel);
    const token = this.nextToken++;
    this.send([Op.PUB, channel, dataJson, token]);
    this.acking.set(token, [ws, id]);
  }

  /**
   * An HTTP publish (POST /publish, the server API).
   * @param {string} [idempotencyKey]
   * @param {number} [version]
   * @returns {Promise<{seq: number, epoch: string, skipped?: string}>} where the engine put the message, or why it skipped it
   */
  publishForSeq(channel, dataJson, idempotencyKey, version) {
    const token = this.nextToken++;
    this.send(
      idempotencyKey === undefined && version === undefined
        ? [Op.PUB, channel, dataJson, token]
        : [Op.PUB, channel, dataJson, token, idempotencyKey, version]
    );
    return new Promise((resolve, reject) => this.replies.set(token, { resolve, reject, channel }));
  }

  /** @returns {Promise<import('../engines/index.js').HistoryAnswer>} */
  history(channel, query) {
    return this.ask([Op.HISTORY, channel, query]);
  }

  /**
   * Asks the primary to route `channel` here and to say where it stands
   * (with `since`: what was missed); onRouted(request, answer) gets the
   * reply, in order with the channel's messages.
   * @param {{channel: string, since?: {seq: number, epoch: string}}} request ../session/sessions.js's JoinRequest
   */
  subscribe(request) {
    const token = this.nextToken++;
    this.subscribing.set(token, request);
    const { channel, since } = request;
    this.send(since === undefined ? [Op.SUB, channel, token] : [Op.SUB, channel, token, since.seq, since.epoch]);
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
    // message goes straight out, as cheap as before (../transport/coalesce.js).
    coalescer.batching = severalMessages(ops);
    try {
      this.dispatch(ops);
    } finally {
      coalescer.batching = false;
    }
  }

  dispatch(ops) {
    for (const op of ops) {
      switch (op[0]) {
        case Op.MSG:
          this.deliver(op[1], op[2], op[3]);
          break;
        case Op.SEQ:
          this.replied(op);
          break;
        case Op.SUBOK:
          this.routed(op);
          break;
        case Op.BUSY:
          this.primaryBusy = op[1];
          break;
        case Op.ENGINE:
          this.engineUp = op[1];
          break;
        case Op.EPOCH:
          this.restarted(op[1], op[2]);
          break;
        default:
          if (!this.handlers.has(op[0])) throw unknownOp(op);
          this.handlers.get(op[0])(op);
      }
    }
  }

  replied([, token, seq, epoch, skipped]) {
    const ack = this.acking.get(token);
    if (ack !== undefined) {
      this.acking.delete(token);
      const [ws, id] = ack;
      if (ws.readyState !== ws.OPEN || ws[kTransport].acksPublishes === false) return;
      ws.send(seq === null ? errorFrame(ErrorCode.UNAVAILABLE, NOT_STORED_MESSAGE, id) : publishAckFrame(id, seq, epoch));
      return;
    }
    const reply = this.replies.get(token);
    if (reply === undefined) return;
    this.replies.delete(token);
    if (seq === null) return reply.reject(new GatewayError(ErrorCode.UNAVAILABLE, NOT_STORED_MESSAGE));
    if (skipped == null) countPublished(reply.channel); // null: as IPC carries undefined
    else metrics.skipped.inc({ reason: skipped });
    reply.resolve(skipped == null ? { seq, epoch } : { skipped, seq, epoch });
  }

  /** A routed channel's new epoch: a recovery from the old one must not look up to date here. */
  restarted(channel, epoch) {
    const local = this.subscriptions.channel(channel);
    if (local === undefined || !local.routed) return;
    local.epoch = epoch;
    local.seq = 0;
  }

  deliver(channel, seq, dataJson) {
    const subscribers = this.subscriptions.subscribers(channel);
    if (subscribers === undefined) return;
    subscribers.seq = seq;
    // Encoded once per transport present, on its first subscriber.
    const { encoded, maxBuffered } = this;
    encoded.fill(undefined);
    const deltas = subscribers.deltas; // undefined unless some subscriber takes deltas
    deltas?.next(seq, dataJson);
    let delivered = 0;
    for (const conn of subscribers) {
      const transport = conn[kTransport];
      const message = (encoded[transport.index] ??= transport.encode(channel, seq, subscribers.epoch, dataJson));
      if (deltas?.has(conn) ? deltas.write(conn, channel, message, maxBuffered) : transport.writeMessage(conn, message, maxBuffered)) delivered++;
    }
    if (delivered > 0) countDelivered(channel, delivered);
    if (deltas !== undefined) countDeltas(deltas);
  }

  routed([, token, epoch, seq, result, replay]) {
    const request = this.subscribing.get(token);
    if (request === undefined) return;
    this.subscribing.delete(token);
    const { local } = request;
    // A record dropped (and perhaps made anew) since the request is stale:
    // the primary may stop routing to it any moment.
    const current = this.subscriptions.channel(request.channel) === local;
    if (current) {
      local.routed = true;
      local.epoch = epoch;
      local.seq = seq;
    }
    this.onRouted(request, { current, epoch, seq, result: result ?? undefined, replay: replay ?? undefined });
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

function countDeltas({ sent, full }) {
  if (sent > 0) metrics.deltas.inc({ result: 'sent' }, sent);
  if (full > 0) metrics.deltas.inc({ result: 'full' }, full);
}
