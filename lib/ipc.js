// The IPC between the primary and its workers: the message types, and the
// batch. Operations queued during one tick leave in a single `send`, which is
// what makes the relay fast (one message per publish spends its time in the
// IPC channel, not in the relay).
//
// An operation is a small array whose first item is one of `Op`; their
// arguments are listed in lib/worker/relay.js, lib/session/users.js,
// lib/session/calls.js and lib/session/presence.js.

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
 * dropped.
 */
export const Op = Object.freeze({
  // worker -> primary
  PUB: 'pub',
  SUB: 'sub',
  UNSUB: 'unsub',
  STATS: 'stats',
  USER_ADD: 'uadd',
  USER_DEL: 'udel',
  IP_ADD: 'ipadd', // under --balance reuseport or even, with --max-conns-per-ip
  IP_DEL: 'ipdel',
  REFUSED: 'refused', // a connection a worker's own listener closed before any HTTP (reuseport)
  HISTORY: 'hist', // the server API's history read
  CALL: 'call', // a Call on the whole cluster (lib/primary/calls.js)
  RAN: 'ran', // this worker's part of a Call
  PRESENCE_JOIN: 'pjoin', // a client entered a presence or joinLeave channel (lib/session/presence.js)
  PRESENCE_LEAVE: 'pleave',
  PRESENCE_ADMIT: 'padmit', // a join under a cap of members, decided where the entries live
  PRESENCE: 'pres', // a presence or presence_stats read
  PROTOCOL_WEBHOOK: 'xwh', // an event a worker saw for another protocol's webhooks (lib/pusher/webhooks.js)
  APP_ADD: 'aadd', // a Pusher app's connection opened: [Op.APP_ADD, appId, token | null] (lib/primary/counts.js)
  APP_DEL: 'adel',
  APP_EVENTS: 'aev', // may a Pusher app's HTTP API call publish these many events? (lib/primary/app-rates.js)
  SUBSCRIPTIONS_CHANGED: 'subch', // a Pusher channel's subscribers here changed (lib/pusher/subscription-count.js)
  ADMIN_DONE: 'admind', // the server API's answer to an admin page's call (lib/native/admin-calls.js)
  // primary -> worker
  MSG: 'msg',
  SEQ: 'seq',
  SUBOK: 'subok',
  BUSY: 'busy',
  ENGINE: 'engine',
  EPOCH: 'epoch',
  USER_OK: 'uok',
  IP_OK: 'ipok',
  APP_OK: 'aok', // the answer to APP_ADD: within the app's maxConnections
  APP_EVENTS_OK: 'aevok',
  SUBSCRIPTION_COUNT: 'subcount', // a Pusher channel's count, for its subscribers here
  HISTORY_DONE: 'histd',
  RUN: 'run', // run a Call's part here
  CALL_DONE: 'calld',
  PRESENCE_DONE: 'presd', // the answer to a presence read
  PRESENCE_ADMITTED: 'padmitd', // the answer to a presence admission: whether the entry was added
  PRESENCE_DIFF: 'pdiff', // a presence_diff frame for the channel's subscribers
  ADMIN: 'admin', // run a server API method for the admin page (lib/primary/admin-calls.js)
  APPS: 'apps' // Pusher apps changed: [Op.APPS, apps changed, ids removed (null: the apps are all these), degraded] (lib/primary/apps.js)
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
  INFO: 'info' // {} -> [node figures]
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

export class IpcBatch {
  /** @param {{send: Function}} target a cluster Worker or `process` in a worker */
  constructor(target) {
    this.target = target;
    this.ops = [];
    this.inFlight = 0; // operations handed to send() whose write has not completed
    this.flush = this.flush.bind(this);
  }

  get congested() {
    return this.inFlight > MAX_OPS_IN_FLIGHT;
  }

  push(op) {
    if (this.ops.length === 0) setImmediate(this.flush);
    this.ops.push(op);
  }

  flush() {
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
