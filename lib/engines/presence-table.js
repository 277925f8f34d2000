// The presence entries one process holds, by channel: the whole cluster's
// under the memory engine (./presence-memory.js), this node's own under Redis
// (./redis/presence.js, which refreshes them there and takes them out when a
// worker dies). Per channel, its clients and how many each user has, so a
// user's first client and last one are told apart in O(1), and the digest
// of its client ids kept.
import { clientHash } from '../protocol/presence-hash.js';

class Entry {
  /** @param {import('../core/identity.js').Member} member */
  constructor(route, member) {
    this.route = route; // the worker's route: its clients leave when it dies
    this.user = member.user ?? null; // null under --auth none
    this.member = member;
  }
}

class Room {
  constructor() {
    this.clients = new Map(); // client -> Entry
    this.users = new Map(); // user -> clients in the room
    this.digest = 0; // XOR of the clients' hashes (clientHash in lib/protocol/presence-hash.js)
  }
}

export class PresenceTable {
  constructor() {
    this.rooms = new Map(); // channel -> Room
    this.size = 0; // entries, every channel
  }

  /** Whether the client has an entry in the channel. */
  holds(channel, client) {
    return this.rooms.get(channel)?.clients.has(client) === true;
  }

  /** @returns {Room|undefined} */
  room(channel) {
    return this.rooms.get(channel);
  }

  /**
   * @returns {0|1|2} 0: the client was there already; 1: added; 2: added, the user's first client in the channel
   */
  add(channel, client, route, member) {
    let room = this.rooms.get(channel);
    if (room === undefined) this.rooms.set(channel, (room = new Room()));
    if (room.clients.has(client)) return 0;
    const entry = new Entry(route, member);
    const { user } = entry;
    room.clients.set(client, entry);
    room.digest = (room.digest ^ clientHash(client)) >>> 0;
    this.size++;
    if (user === null) return 1;
    const count = room.users.get(user) ?? 0;
    room.users.set(user, count + 1);
    return count === 0 ? 2 : 1;
  }

  /**
   * @returns {{entry: Entry, departed: boolean}|undefined} the entry taken out, and whether it was its user's last client in the channel
   */
  remove(channel, client) {
    const room = this.rooms.get(channel);
    const entry = room?.clients.get(client);
    if (entry === undefined) return undefined;
    room.clients.delete(client);
    room.digest = (room.digest ^ clientHash(client)) >>> 0;
    this.size--;
    let departed = false;
    if (entry.user !== null) {
      const count = room.users.get(entry.user) - 1;
      departed = count === 0;
      if (departed) room.users.delete(entry.user);
      else room.users.set(entry.user, count);
    }
    if (room.clients.size === 0) this.rooms.delete(channel);
    return { entry, departed };
  }

  /** @returns {Array<[string, string]>} [channel, client] of every entry a route holds (a dead worker's) */
  ofRoute(route) {
    const out = [];
    for (const [channel, room] of this.rooms) {
      for (const [client, entry] of room.clients) if (entry.route === route) out.push([channel, client]);
    }
    return out;
  }

  /** @returns {Object<string, import('../core/identity.js').Member>} the channel's entries as a presence answer lists them */
  members(channel) {
    const members = {};
    for (const [client, entry] of this.rooms.get(channel)?.clients ?? []) members[client] = entry.member;
    return members;
  }

  /**
   * Channels with entries and their sizes, largest first, at most `max` (the
   * status page, every second): one pass that keeps the `max` largest, not a
   * sort of every channel.
   */
  largest(max) {
    const top = [];
    for (const [channel, room] of this.rooms) {
      const clients = room.clients.size;
      if (top.length === max && clients <= top[max - 1].clients) continue;
      let at = top.length;
      while (at > 0 && top[at - 1].clients < clients) at--;
      top.splice(at, 0, { channel, clients, users: room.users.size });
      if (top.length > max) top.pop();
    }
    return top;
  }
}
