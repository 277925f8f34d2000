// What the engines share of presence: the shape of an entry, the join and
// leave frames, the too_many answer, and the per-channel rate that keeps a reconnect storm in a big
// room from multiplying into N² frames.
//
// A client's entry travels and is stored as `fields`: its JSON members after
// the client id, with a leading comma (`,"user":"42","info":{…}`, or '' under
// --auth none with no info), built once per connection by the worker
// (lib/worker/presence.js). Both a presence answer's entry and a join/leave
// frame are that text with braces around it: nothing is parsed again.
import { Op } from '../ipc.js';
import { ErrorCode } from '../protocol.js';
import { pushAll } from './routes.js';

/** A presence answer's value for one client: `{"user":…,"info":…}`. */
export function entryJson(fields) {
  return fields === '' ? '{}' : `{${fields.slice(1)}}`;
}

/** `{"type":"join"|"leave","channel":…,"client":…,"user":…,"info":…}` (channel names and client ids need no escaping). */
export function joinLeaveFrame(kind, channel, client, fields) {
  return `{"type":"${kind}","channel":"${channel}","client":"${client}"${fields}}`;
}

/** The error of a presence answer past --presence-max-clients. */
export function tooMany(max) {
  return { error: ErrorCode.TOO_MANY, message: `more than ${max} clients (--presence-max-clients): ask presence_stats` };
}

/** The kind of a frame joinLeaveFrame() built. */
export function kindOf(frame) {
  return frame.startsWith('{"type":"join"') ? 'join' : 'leave';
}

/**
 * Sends join/leave frames to a channel's routes, at most `rate` per channel
 * per second (a fixed one-second window: the count starts over each second);
 * the rest are dropped and counted. Clients that need the exact list re-read
 * presence (the browser client's member list does so when it sees a gap).
 */
export class JoinLeaveSender {
  /**
   * @param {number} rate --join-leave-rate
   * @param {(channel: string) => object|undefined} routesOf the channel's state with its routes (./routes.js)
   */
  constructor(rate, routesOf) {
    this.rate = rate;
    this.routesOf = routesOf;
    this.second = 0;
    this.sent = new Map(); // channel -> frames sent in this second
    this.instruments = undefined;
  }

  /** @param {string} frame from joinLeaveFrame() */
  send(channel, client, frame) {
    const state = this.routesOf(channel);
    if (state?.routes === undefined) return;
    const second = Math.floor(Date.now() / 1000);
    if (second !== this.second) {
      this.second = second;
      this.sent.clear();
    }
    const sent = this.sent.get(channel) ?? 0;
    if (sent >= this.rate) {
      this.instruments?.joinLeaveDropped(1);
      return;
    }
    this.sent.set(channel, sent + 1);
    pushAll(state, [Op.JOIN_LEAVE, channel, client, frame]);
  }
}
