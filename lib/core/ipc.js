// The IPC between the primary and its workers: the message types, and the
// batch. Operations queued during one tick leave in a single `send`, which is
// what makes the relay fast (one message per publish spends its time in the
// IPC channel, not in the relay).
//
// An operation is a small array whose first item is one of `Op`, below,
// with its fields; ./ipc-link.js is either end of the channel.

/** IPC message types between the primary and its workers. */
export const Message = Object.freeze({
  SOCKET: 'sticky:balance', // sticky-session's hand-over message, with the socket
  START: 'gateway:start', // a worker's first message, and the primary's answer: its configuration and number (whenStarted)
  READY: 'gateway:ready',
  BATCH: 'gateway:batch',
  DRAIN: 'gateway:drain',
  PROBE: 'gateway:probe' // a throwaway handle: checks the hand-over is acknowledged (lib/primary/probe.js)
});

/**
 * In a worker: asks the primary for its configuration and calls `start` with
 * the answer. The configuration (its secrets included) travels over the IPC
 * channel rather than in the environment, where /proc/<pid>/environ shows it
 * and every process the worker spawns would inherit it. The worker asks once
 * it listens: a message sent before a process has a 'message' listener is
 * lost.
 * @param {(config: object, worker: number) => void} start
 */
export function whenStarted(start) {
  process.on('message', function started(msg) {
    if (msg?.type !== Message.START) return;
    process.off('message', started);
    start(msg.config, msg.worker);
  });
  process.send({ type: Message.START });
}

/**
 * Operation names. Where operations are dispatched, a name that is none of
 * these throws (unknownOp): a misspelt one fails at once instead of being
 * dropped. An operation is [name, ...fields], as listed here; a question's
 * first field is its token, and its reply is ANSWER or FAILED (./ipc-link.js).
 * Positional, not objects with named fields: the relay's hot operations (PUB,
 * MSG) cost a third less to serialise and parse without the field names, and
 * every reader destructures the fields by these names.
 */
export const Op = Object.freeze({
  // worker -> primary
  PUB: 'pub', // [token (0: no reply), channel, data, exclude, idempotencyKey, version] -> PublishResult
  SUB: 'sub', // [token, channel, sinceSeq?, sinceEpoch?] -> SubscribeReply (lib/engines/index.js)
  UNSUB: 'unsub', // [channel]: the last local holder left
  STATS: 'stats', // [figures]
  USER_ADD: 'uadd', // [token, user] -> within --max-conns-per-user
  USER_DEL: 'udel', // [user]
  IP_ADD: 'ipadd', // [token, ip] -> within --max-conns-per-ip (under --balance reuseport or even)
  IP_DEL: 'ipdel', // [ip]
  REFUSED: 'refused', // [reason]: a connection a worker's own listener closed before any HTTP (reuseport)
  HISTORY: 'hist', // [token, channel, query] -> HistoryAnswer: the server API's history read
  CALL: 'call', // [token, name, args] -> a Call's value on the whole cluster (lib/primary/calls.js)
  PRESENCE_JOIN: 'pjoin', // [channel, client, member]: a client entered a presence or joinLeave channel (lib/session/presence.js)
  PRESENCE_LEAVE: 'pleave', // [channel, client]
  PRESENCE_SUBSCRIBE: 'psub', // [token, channel, client, member, maxUsers] -> SubscribeReply and `clients` (the members, as presence's list): a join under a cap of members, or too_many
  PRESENCE: 'pres', // [token, channel, stats] -> a presence or presence_stats read
  PROTOCOL_WEBHOOK: 'xwh', // [channel, event]: an event a worker saw for another protocol's webhooks (lib/pusher/webhooks.js)
  APP_ADD: 'aadd', // [token, appId] -> within the app's maxConnections (lib/primary/counts.js); [0, appId, n]: n more, counted, no reply
  APP_DEL: 'adel', // [appId, n?]: one (or n) fewer
  APP_EVENTS: 'aev', // [token, appId, events] -> may a Pusher app's HTTP API call publish these many events? (lib/primary/app-rates.js)
  SUBSCRIPTIONS_CHANGED: 'subch', // [channel]: a Pusher channel's subscribers here changed (lib/pusher/subscription-count.js)
  // either way
  ANSWER: 'ans', // [token, value]: a question's reply
  FAILED: 'fail', // [token, code, message]: a question's reply, an error of the family
  // primary -> worker
  MSG: 'msg', // [channel, seq, data, exclude?]: a channel's message, for its subscribers here but `exclude` (a client id)
  BUSY: 'busy', // [boolean]: a worker is not keeping up: refuse publishes
  ENGINE: 'engine', // [boolean]: whether the engine (Redis) can publish
  EPOCH: 'epoch', // [channel, epoch]: the channel's sequence started over (Redis lost it): the next MSG counts from 1
  SUBSCRIPTION_COUNT: 'subcount', // [channel, count]: a Pusher channel's count, for its subscribers here
  RUN: 'run', // [token, name, args] -> this worker's part of a Call
  PRESENCE_DIFF: 'pdiff', // [channel, joinsJson, leavesJson]: who came and went (the JSON of {client: member}), for the channel's subscribers
  ADMIN: 'admin', // [token, method, params] -> a server API method's answer, for the admin page (lib/primary/admin-calls.js)
  APPS: 'apps' // [apps changed, ids removed (null: the apps are all these), degraded]: Pusher apps changed (lib/primary/apps.js)
});

/**
 * What a worker may ask of the whole cluster (every worker, and every node
 * under an engine with the cluster-wide part): POST /disconnect and the
 * server API's methods that reach users' connections or gather figures.
 */
export const Call = Object.freeze({
  KICK: 'kick', // {user, code, reason} -> connections closed
  SUBSCRIBE: 'subscribe', // {user, channel} -> connections subscribed
  UNSUBSCRIBE: 'unsubscribe', // {user, channel} -> connections unsubscribed
  CHANNELS: 'channels', // {prefix} -> {name: subscribers}, or null past the bound
  INFO: 'info', // {} -> [node figures]
  CLOSE_SUBSCRIBERS: 'close', // {channel, code, reason} -> connections closed: every connection subscribed to the channel, closed as its way in closes
  SUBSCRIPTION_COUNT: 'subcount' // {channel, count} -> nodes told: a channel's count for its subscribers everywhere (Op.SUBSCRIPTION_COUNT to every worker)
});

/** Channels one answer of Call.CHANNELS may list; past it the answer is null (the API's too_many). */
export const MAX_CHANNELS = 10000;

/** The error for an operation that no dispatcher handles. */
export function unknownOp(op) {
  return new TypeError(`unknown IPC operation ${JSON.stringify(op[0])}`);
}

/** Workers report their figures, and the primary sends the cluster's, this often. */
export const STATS_INTERVAL_MS = 1000;

/**
 * Operations sent but not yet written to the channel, past which the batch
 * counts as congested: the other side is not reading fast enough, and what
 * is queued waits in this process's memory.
 */
const MAX_OPS_IN_FLIGHT = 50000;

/**
 * How long an operation nobody waits for may wait for a batch: a count that
 * caps nothing (a Pusher app's connections without maxConnections) rides the
 * next batch, or leaves on its own after this. A connection's open and close
 * would otherwise cost a channel write each, most of what a worker spends on
 * the IPC in a reconnect storm.
 */
const LATER_MS = 20;

export class IpcBatch {
  /** @param {{send: Function}} target a cluster Worker or `process` in a worker */
  constructor(target) {
    this.target = target;
    this.ops = [];
    this.inFlight = 0; // operations handed to send() whose write has not completed
    this.flush = this.flush.bind(this);
    this.due = undefined; // the timer of operations pushed for later, while some wait
  }

  get congested() {
    return this.inFlight > MAX_OPS_IN_FLIGHT;
  }

  push(op) {
    if (this.ops.length === 0 || this.due !== undefined) this.soon();
    this.ops.push(op);
  }

  /** Queues `op` behind the others, to leave with the next batch or within LATER_MS: for an operation nobody waits for. */
  pushLater(op) {
    if (this.ops.length === 0) this.due = setTimeout(this.flush, LATER_MS).unref();
    this.ops.push(op);
  }

  /** This turn's batch leaves at the end of the turn, with whatever waited for later. */
  soon() {
    if (this.due !== undefined) {
      clearTimeout(this.due);
      this.due = undefined;
    }
    setImmediate(this.flush);
  }

  flush() {
    if (this.due !== undefined) {
      clearTimeout(this.due);
      this.due = undefined;
    }
    const count = this.ops.length;
    if (count === 0) return;
    const ops = this.ops;
    this.ops = [];
    // A worker that is gone or going cannot take more; its clients are gone with it.
    if (this.target.isConnected?.() === false || this.target.connected === false) return;
    this.inFlight += count;
    // Called once the write completes, or fails because the channel closed.
    this.target.send({ type: Message.BATCH, ops }, undefined, undefined, () => {
      this.inFlight -= count;
    });
  }
}
