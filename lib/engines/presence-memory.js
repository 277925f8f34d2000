// Presence under the memory engine: every worker's clients in the primary's
// one table, so an answer is exact across workers the moment a worker's
// join or leave arrives. A dead worker's clients leave at once (detach),
// in the next diff and with member departures like any other leave.
import { PresenceTable } from './presence-table.js';
import { DiffSender, tooMany } from './join-leave.js';

export class MemoryPresence {
  /**
   * @param {object} options
   * @param {number} options.maxClients --presence-max-clients
   * @param {number} options.interval --join-leave-interval, ms
   * @param {(channel: string) => object|undefined} options.routesOf the channel's routed state
   * @param {(channel: string) => import('../core/namespaces.js').Namespace} options.namespaceOf
   */
  constructor({ maxClients, interval, routesOf, namespaceOf }) {
    this.table = new PresenceTable();
    this.diffs = new DiffSender(interval, routesOf);
    this.maxClients = maxClients;
    this.namespaceOf = namespaceOf;
    this.members = []; // onMember listeners
  }

  join(channel, route, client, member) {
    const added = this.table.add(channel, client, route, member);
    if (added === 0) return;
    if (added === 2) this.member(channel, member.user, true, client, member);
    if (this.namespaceOf(channel).joinLeave) this.diffs.join(channel, client, member);
  }

  /** join() if the channel has fewer than `maxUsers` users or already has this one; `answer(added)`. */
  admit(channel, route, client, member, maxUsers, answer) {
    const room = this.table.room(channel);
    const full = room !== undefined && !room.clients.has(client) && !room.users.has(member.user) && room.users.size >= maxUsers;
    if (!full) this.join(channel, route, client, member);
    answer(!full);
  }

  leave(channel, client) {
    const left = this.table.remove(channel, client);
    if (left === undefined) return;
    if (left.departed) this.member(channel, left.entry.user, false, client);
    if (this.namespaceOf(channel).joinLeave) this.diffs.leave(channel, client, left.entry.member);
  }

  /** A worker died: its clients leave every channel. */
  detach(route) {
    for (const [channel, client] of this.table.ofRoute(route)) this.leave(channel, client);
  }

  list(channel, answer) {
    const room = this.table.room(channel);
    if (room !== undefined && room.clients.size > this.maxClients) return answer(tooMany(this.maxClients));
    if (this.namespaceOf(channel).joinLeave) this.diffs.reading(channel);
    answer({ clients: this.table.members(channel) });
  }

  stats(channel, answer) {
    const room = this.table.room(channel);
    answer({ clients: room?.clients.size ?? 0, users: room?.users.size ?? 0, digest: room?.digest ?? 0 });
  }

  /** Nothing is asked elsewhere: settled at once. */
  async settled() {}

  stop() {
    this.diffs.stop();
  }

  onMember(listener) {
    this.members.push(listener);
  }

  member(channel, user, present, client, member) {
    for (const listener of this.members) listener(channel, user, present, client, member);
  }
}
