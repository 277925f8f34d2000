// What the engines share of presence: the shape of an entry, the too_many
// answer, and the diffs that tell a channel's subscribers who came and went:
// at most one presence_diff frame per channel per --join-leave-interval, so a
// reconnect storm in a big room costs each subscriber a frame per interval,
// not one per client, and nothing is dropped.
//
// A client's entry travels and is stored as `fields`: its JSON members after
// the client id, with a leading comma (`,"user":"42","info":{…}`, or '' under
// --auth none with no info), built once per connection by the worker
// (lib/session/presence.js). Both a presence answer's entry and a diff's entry
// are that text with braces around it: nothing is parsed again.
import { Op } from '../core/ipc.js';
import { ErrorCode, GatewayError } from '../core/errors.js';
import { presenceDiffFrame } from '../protocol/frames.js';
import { pushAll } from './routes.js';

/** A presence answer's value for one client: `{"user":…,"info":…}`. */
export function entryJson(fields) {
  return fields === '' ? '{}' : `{${fields.slice(1)}}`;
}

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
    this.joins = new Map(); // client -> fields
    this.leaves = new Map(); // client -> fields
    this.exact = false;
  }

  join(client, fields) {
    if (this.leaves.delete(client) && !this.exact) return;
    this.joins.set(client, fields);
  }

  leave(client, fields) {
    if (this.joins.delete(client) && !this.exact) return;
    this.leaves.set(client, fields);
  }

  get empty() {
    return this.joins.size === 0 && this.leaves.size === 0;
  }

  frame(channel) {
    return presenceDiffFrame(channel, entriesJson(this.joins), entriesJson(this.leaves));
  }
}

/**
 * Folds a process's joins and leaves per channel and sends each channel's
 * routes [Op.PRESENCE_DIFF, channel, frame] at most once per interval: the
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

  join(channel, client, fields) {
    this.fold(channel).join(client, fields);
  }

  leave(channel, client, fields) {
    this.fold(channel).leave(client, fields);
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
      if (state?.routes !== undefined) pushAll(state, [Op.PRESENCE_DIFF, channel, fold.frame(channel)]);
    }
  }

  stop() {
    clearTimeout(this.timer);
  }
}

/** `{"<client>":{…},…}` of a fold's map. */
function entriesJson(entries) {
  let json = '{';
  for (const [client, fields] of entries) json += `${json.length > 1 ? ',' : ''}"${client}":${entryJson(fields)}`;
  return `${json}}`;
}
