// What the engines share of presence: the too_many answer, and the diffs
// that tell a channel's subscribers who came and went: at most one diff per
// channel per --join-leave-interval, so a reconnect storm in a big room costs
// each subscriber a frame per interval, not one per client, and nothing is
// dropped. A client's entry is its member ({user, info}: lib/core/identity.js),
// a value; a diff's members leave as one JSON text per side, which each worker
// writes into its subscribers' frames (lib/session/presence.js).
import { Op } from '../core/ipc.js';
import { ErrorCode, GatewayError } from '../core/errors.js';
import { pushAll } from './routes.js';

/** The error of a presence answer past --presence-max-clients. */
export function tooMany(max) {
  return new GatewayError(ErrorCode.TOO_MANY, `more than ${max} clients (--presence-max-clients): ask presence_stats`);
}

/**
 * One channel's changes since its last diff. A client that came and went
 * within the interval appears in neither map: the subscribers' lists never
 * held it (or still hold it, for one that went and came back). That holds
 * only for readers whose presence read saw neither change, so once a read is
 * asked the fold keeps each client's last change instead (`exact`): a reader
 * whose read fell between a client's join and its leave gets the leave, and
 * one that applies both to a list that already holds the outcome changes
 * nothing (a join of a listed client, a leave of an absent one).
 */
class Fold {
  constructor() {
    this.joins = new Map(); // client -> member
    this.leaves = new Map(); // client -> member
    this.exact = false;
  }

  join(client, member) {
    if (this.leaves.delete(client) && !this.exact) return;
    this.joins.set(client, member);
  }

  leave(client, member) {
    if (this.joins.delete(client) && !this.exact) return;
    this.leaves.set(client, member);
  }

  get empty() {
    return this.joins.size === 0 && this.leaves.size === 0;
  }

  /**
   * The channel's routes' operation. Its members are encoded once here, as
   * JSON, for every worker the channel is routed to (IPC carries JSON
   * anyway): a worker writes them into its frames as they are, never
   * decoding a storm's thousands of members only to encode them again.
   * @returns {Array}
   */
  diff(channel) {
    return [Op.PRESENCE_DIFF, channel, JSON.stringify(Object.fromEntries(this.joins)), JSON.stringify(Object.fromEntries(this.leaves))];
  }
}

/**
 * Folds a process's joins and leaves per channel and sends each channel's
 * routes [Op.PRESENCE_DIFF, channel, joinsJson, leavesJson] at most once per interval: the
 * first change after a quiet spell starts the interval, its end sends every
 * channel that changed.
 */
export class DiffSender {
  /**
   * @param {number} interval --join-leave-interval, ms
   * @param {(channel: string) => object|undefined} routesOf the channel's state with its routes (./routes.js)
   */
  constructor(interval, routesOf) {
    this.interval = interval;
    this.routesOf = routesOf;
    this.folds = new Map(); // channel -> Fold, changed in this interval
    this.timer = undefined;
    this.flush = this.flush.bind(this);
  }

  join(channel, client, member) {
    this.fold(channel).join(client, member);
  }

  leave(channel, client, member) {
    this.fold(channel).leave(client, member);
  }

  /**
   * A presence read of the channel is about to be asked (and again when it
   * is answered, in case the store's changes reach this process after its
   * answer): the rest of this interval keeps every change.
   */
  reading(channel) {
    this.fold(channel).exact = true;
  }

  fold(channel) {
    let fold = this.folds.get(channel);
    if (fold === undefined) {
      this.folds.set(channel, (fold = new Fold()));
      if (this.timer === undefined) {
        this.timer = setTimeout(this.flush, this.interval);
        this.timer.unref();
      }
    }
    return fold;
  }

  /** Sends each changed channel its diff; the next change starts a new interval. */
  flush() {
    this.timer = undefined;
    const folds = this.folds;
    this.folds = new Map();
    for (const [channel, fold] of folds) {
      if (fold.empty) continue;
      const state = this.routesOf(channel);
      if (state?.routes !== undefined) pushAll(state, fold.diff(channel));
    }
  }

  stop() {
    clearTimeout(this.timer);
  }
}

