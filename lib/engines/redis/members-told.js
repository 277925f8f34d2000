// What this node's subscribers of each joinLeave channel were told of its
// members, so that joins and leaves lost to a subscriber connection that
// dropped (a cut, a failover, a Redis restart: PUBLISH keeps nothing for a
// connection that is not there) are told after all. Each channel routed here
// keeps a copy of its members: a read when its first route comes, plus every
// join and leave this node received since, in order (the read and the live
// frames race, but each client's last change wins, so the copy converges to
// what the frames say). Once the channel is SUBSCRIBEd again, its members are
// read again and the difference goes into the channel's next diff, so every
// list kept from a read plus the diffs equals a fresh read.
//
// While that read is in flight the live frames are held: one published after
// the read must follow its difference, not precede it. The diff is marked
// exact meanwhile (../join-leave.js), so a frame published before the read
// and received after it changes nothing in a list that already holds its
// outcome. A Redis that restarted empty holds only the entries the nodes
// have put back so far (each within one refresh, quietly: ./presence.js), so
// the channel is read once more a refresh period after each resync, and
// what came back is told too; when the channel's keys were lost with it, a
// member the first read lacks is told gone only if the second lacks it too,
// so a restart costs no member list a leave and a join. The cost: one map of members per routed
// joinLeave channel per node, and two reads per such channel per resubscribe.
// Members are kept as the script stores them (./stored-member.js), compared
// as text, and told as values.
import { memberOfStored } from './stored-member.js';

const RETRY_MS = 500;

class Told {
  constructor() {
    this.members = undefined; // client -> stored member, once read; null past --presence-max-clients
    this.held = undefined; // [join, client, stored member, ...] received while a read is in flight
    this.resyncing = false; // that read follows a resubscribe: the held frames wait for its difference
    this.again = false; // a resubscribe came while a read was in flight
    this.keepAbsent = false; // Redis lost the channel: the next resync read tells no leave (the one a refresh later does)
  }
}

export class MembersTold {
  /**
   * @param {object} options
   * @param {(channel: string) => Promise<Map<string, string> | null>} options.read the channel's members now (client -> stored member), null past the bound
   * @param {import('../join-leave.js').DiffSender} options.diffs where the routes' diffs are folded
   * @param {(channel: string) => boolean} options.joinLeave whether the channel's namespace tells joins and leaves
   * @param {number} options.refreshMs how often every node puts its entries back: the second read follows the first by this
   * @param {(channel: string, client: string) => boolean} options.ours whether a client a read lacks is still this node's
   *   (another node swept it while this one was cut off): never told as a leave, since a client never sees its own
   */
  constructor({ read, diffs, joinLeave, refreshMs, ours }) {
    this.read = read;
    this.ours = ours;
    this.refreshMs = refreshMs;
    this.diffs = diffs;
    this.joinLeave = joinLeave;
    this.channels = new Map(); // channel -> Told
  }

  /** The channel got its first route on this node (kept from now on), or lost its last (forgotten). */
  routed(channel, occupied) {
    if (!occupied) return this.channels.delete(channel);
    if (!this.joinLeave(channel) || this.channels.has(channel)) return;
    const told = new Told();
    this.channels.set(channel, told);
    this.fetch(channel, told, false);
  }

  /** A join (or a leave) the script published: to the routes' diffs, and into the copy. */
  received(channel, join, client, stored) {
    const told = this.channels.get(channel);
    if (told?.resyncing) return told.held.push(join, client, stored);
    this.tell(channel, join, client, stored);
    if (told === undefined) return;
    if (told.held !== undefined) told.held.push(join, client, stored);
    else if (told.members) apply(told.members, join, client, stored);
  }

  /**
   * The channel is SUBSCRIBEd again: what was published meanwhile never arrived.
   * `lost`: Redis lost the channel's keys (a restart with no data), so a member
   * the first read lacks may only be waiting for its node's refresh: its
   * leave waits for the read a refresh later, which finds it back or not.
   */
  resync(channel, lost = false) {
    const told = this.channels.get(channel);
    if (told === undefined) return;
    told.keepAbsent = lost;
    this.resyncOnce(channel, told);
    setTimeout(() => this.channels.get(channel) === told && this.resyncOnce(channel, told), this.refreshMs).unref();
  }

  /** Reads the channel again unless a read is in flight (which then reads once more). */
  resyncOnce(channel, told) {
    if (told.held !== undefined) told.again = true;
    else this.fetch(channel, told, true);
  }

  fetch(channel, told, resync) {
    told.held = [];
    told.resyncing = resync;
    if (resync) this.diffs.reading(channel);
    this.read(channel).then(
      (members) => this.fetched(channel, told, members),
      () => this.fetched(channel, told, undefined)
    );
  }

  /** `members` undefined: the read failed (tried again while the channel is routed here). */
  fetched(channel, told, members) {
    const held = told.held;
    const resynced = told.resyncing;
    told.held = undefined;
    told.resyncing = false;
    if (this.channels.get(channel) !== told) return;
    if (members === undefined) {
      told.again ||= resynced || told.members === undefined;
    } else {
      if (resynced && told.members && members) this.tellDifference(channel, told.members, members, told.keepAbsent);
      if (resynced) told.keepAbsent = false;
      told.members = members;
      this.diffs.reading(channel); // frames published before the read may still come
    }
    for (let i = 0; i < held.length; i += 3) {
      if (resynced) this.tell(channel, held[i], held[i + 1], held[i + 2]);
      if (told.members) apply(told.members, held[i], held[i + 1], held[i + 2]);
    }
    if (!told.again) return;
    told.again = false;
    if (members === undefined) setTimeout(() => this.channels.get(channel) === told && this.resyncOnce(channel, told), RETRY_MS).unref();
    else this.fetch(channel, told, true);
  }

  /** Tells what changed from `before` to `now`; this node's own clients (and, with `keepAbsent`, every absent one) stay in `now`. */
  tellDifference(channel, before, now, keepAbsent) {
    for (const [client, stored] of now) if (before.get(client) !== stored) this.tell(channel, true, client, stored);
    for (const [client, stored] of before) {
      if (now.has(client)) continue;
      if (keepAbsent || this.ours(channel, client)) now.set(client, stored);
      else this.tell(channel, false, client, stored);
    }
  }

  tell(channel, join, client, stored) {
    if (join) this.diffs.join(channel, client, memberOfStored(stored));
    else this.diffs.leave(channel, client, memberOfStored(stored));
  }
}

function apply(members, join, client, stored) {
  if (join) members.set(client, stored);
  else members.delete(client);
}
