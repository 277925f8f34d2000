// Presence under the Redis engine: each channel's entries in Redis, written
// and swept by ./presence.lua (its header holds the invariants), and this
// node's own clients in a local table (../presence-table.js), which it
// re-adds every third of --presence-ttl: a node that crashes stops doing so,
// and its clients are gone from every answer --presence-ttl later. After
// Redis restarted empty, the next refresh announces every node's clients
// again (quietly: no joins in the diffs, no member arrivals). After a node
// was cut from Redis for longer than the TTL, another node's sweep announced
// its clients' leaves; its next refresh announces their joins again (the
// script's tombstones tell the two apart), with the member arrivals, so every
// member list converges. A leave this node receives for a client it still
// holds (the sweep met it before the refresh) is not passed on: a client
// never sees its own departure; the channel is refreshed at once instead.
// A join Redis did not answer for is added, and announced, by the next refresh.
//
// Joins and leaves are PUBLISHed by the script on the channel's pub/sub name,
// so every node with subscribers receives them like its messages; each node
// folds what it learnt into its own diffs (../join-leave.js) and sends its
// subscribers one per channel per --join-leave-interval, through what it
// keeps of what its subscribers were told (./members-told.js), so that the
// frames a dropped subscriber connection missed are told after all.
import { readFileSync } from 'node:fs';
import { PresenceTable } from '../presence-table.js';
import { DiffSender, tooMany } from '../join-leave.js';
import { requireNumbers } from '../check-options.js';
import { MembersTold } from './members-told.js';
import { memberOfStored, storedMember } from './stored-member.js';
import { engineUnavailable } from '../../core/errors.js';

const REFRESH_CHUNK = 1000; // clients per script call when refreshing a big channel

export class RedisPresence {
  /**
   * @param {object} options
   * @param {import('ioredis').Redis | import('ioredis').Cluster} options.redis the command connection
   * @param {() => boolean} options.answering whether it answers now (./liveness.js)
   * @param {'publish' | 'spublish'} options.publish how joins and leaves are published (sharded under Redis Cluster)
   * @param {(channel: string) => string} options.tagOf the channel's pub/sub name and keys' prefix
   * @param {number} options.ttl --presence-ttl, seconds
   * @param {number} options.maxClients --presence-max-clients
   * @param {number} options.interval --join-leave-interval, ms
   * @param {(channel: string) => object|undefined} options.routesOf
   * @param {(channel: string) => import('../../core/namespaces.js').Namespace} options.namespaceOf
   */
  constructor({ redis, answering, publish, tagOf, ttl, maxClients, interval, routesOf, namespaceOf }) {
    requireNumbers('RedisPresence', { ttl, maxClients, interval }, { ttl: 1, maxClients: 1, interval: 1 });
    this.redis = redis;
    this.answering = answering;
    this.publish = publish;
    this.tagOf = tagOf;
    this.ttlMs = String(ttl * 1000);
    this.maxClients = maxClients;
    this.namespaceOf = namespaceOf;
    this.table = new PresenceTable(); // this node's clients
    this.diffs = new DiffSender(interval, routesOf);
    this.told = new MembersTold({
      read: (channel) => this.readMembers(channel),
      diffs: this.diffs,
      joinLeave: (channel) => namespaceOf(channel).joinLeave,
      refreshMs: (ttl * 1000) / 3,
      ours: (channel, client) => this.stillHeld(channel, client)
    });
    this.members = []; // onMember listeners
    this.calls = new Set(); // script calls not answered yet
    this.toRefresh = new Set(); // channels to refresh at once (refreshSoon)
    this.unannounced = new Map(); // channel -> this node's clients whose join Redis did not answer for
    redis.defineCommand('gw_presence', { numberOfKeys: 5, lua: readFileSync(new URL('./presence.lua', import.meta.url), 'utf8') });
    this.refresher = setInterval(() => this.refresh(), (ttl * 1000) / 3);
    this.refresher.unref();
  }

  join(channel, route, client, member) {
    if (this.table.add(channel, client, route, member) === 0) return;
    this.add(channel, [client, member.user ?? '', storedMember(member)]);
  }

  /** Adds and announces clients ([client, user, stored member, …]: ./stored-member.js); those Redis did not answer for are added by the next refresh, still announced. */
  add(channel, args) {
    this.run(channel, 'add', args).then(
      ([, answers]) => {
        for (let i = 0; i < answers.length; i++) {
          this.unannounced.get(channel)?.delete(args[3 * i]);
          if (answers[i] === 2) this.member(channel, args[3 * i + 1], true, args[3 * i], memberOfStored(args[3 * i + 2]));
        }
        if (this.unannounced.get(channel)?.size === 0) this.unannounced.delete(channel);
      },
      () => {
        const room = this.table.room(channel);
        for (let i = 0; i < args.length; i += 3) {
          if (!room?.clients.has(args[i])) continue; // left meanwhile
          if (!this.unannounced.has(channel)) this.unannounced.set(channel, new Set());
          this.unannounced.get(channel).add(args[i]);
        }
      }
    );
  }

  /**
   * join() if the channel has fewer than `maxUsers` users or already has
   * this one, decided by the script in one step across nodes; `answer(added)`.
   * The entry is in this node's table meanwhile, so a leave that comes
   * before the answer takes it out of Redis too.
   */
  admit(channel, route, client, member, maxUsers, answer) {
    if (this.table.add(channel, client, route, member) === 0) return answer(true);
    this.run(channel, 'admit', [String(maxUsers), client, member.user ?? '', storedMember(member)]).then(
      ([, [added]]) => {
        if (added === -1) {
          this.table.remove(channel, client);
          return answer(false);
        }
        if (added === 2) this.member(channel, member.user, true, client, member);
        answer(true);
      },
      () => {
        this.table.remove(channel, client);
        answer(false);
      }
    );
  }

  leave(channel, client) {
    const left = this.table.remove(channel, client);
    if (left === undefined) return;
    this.unannounced.get(channel)?.delete(client);
    this.run(channel, 'remove', [client]).then(([, [removed]]) => {
      if (removed === 2) this.member(channel, left.entry.user, false, client);
    }, ignore); // the entry expires instead
  }

  /** A worker died: its clients leave every channel. */
  detach(route) {
    for (const [channel, client] of this.table.ofRoute(route)) this.leave(channel, client);
  }

  list(channel, answer) {
    const joinLeave = this.namespaceOf(channel).joinLeave;
    if (joinLeave) this.diffs.reading(channel);
    this.run(channel, 'read', [String(this.maxClients)]).then(([, entries]) => {
      if (!Array.isArray(entries)) return answer(tooMany(this.maxClients));
      // The changes the script published before this read may reach this node after its answer.
      if (joinLeave) this.diffs.reading(channel);
      const clients = {};
      for (let i = 0; i < entries.length; i += 2) clients[entries[i]] = memberOfStored(storedOf(entries[i + 1]));
      answer({ clients });
    }, () => answer(engineUnavailable()));
  }

  stats(channel, answer) {
    this.run(channel, 'stats', []).then(
      ([, clients, users, digest]) => answer({ clients, users, digest }),
      () => answer(engineUnavailable())
    );
  }

  /**
   * A join or leave the script published on the channel,
   * `{"type":"join"|"leave","channel":…,"client":"…"<stored member>}`: into this node's next diff.
   */
  received(channel, frame) {
    const start = frame.indexOf('"client":"') + 10;
    const end = frame.indexOf('"', start);
    const client = frame.slice(start, end);
    const stored = frame.slice(end + 1, -1);
    if (frame.startsWith('{"type":"join"')) this.told.received(channel, true, client, stored);
    else if (!this.stillHeld(channel, client)) this.told.received(channel, false, client, stored);
  }

  /** Whether this node still holds a client whose entry left Redis (another node's sweep): it is put back at once. */
  stillHeld(channel, client) {
    if (!this.table.room(channel)?.clients.has(client)) return false;
    this.refreshSoon(channel);
    return true;
  }

  /** The channel got its first route on this node, or lost its last. */
  routed(channel, occupied) {
    this.told.routed(channel, occupied);
  }

  /** The channel is SUBSCRIBEd again after the subscriptions dropped: the joins and leaves missed meanwhile are told. */
  resync(channel, lost) {
    this.told.resync(channel, lost);
  }

  /** @returns {Promise<Map<string, string> | null>} the channel's clients now (client -> stored member), null past --presence-max-clients */
  async readMembers(channel) {
    const [, entries] = await this.run(channel, 'read', [String(this.maxClients)]);
    if (!Array.isArray(entries)) return null;
    const members = new Map();
    for (let i = 0; i < entries.length; i += 2) members.set(entries[i], storedOf(entries[i + 1]));
    return members;
  }

  /** Refreshes `channel` once this turn's frames are in: a sweep's many leaves make one call. */
  refreshSoon(channel) {
    if (this.toRefresh.size === 0) setImmediate(() => {
      for (const name of this.toRefresh) {
        const room = this.table.room(name);
        if (room !== undefined) this.refreshChannel(name, room);
      }
      this.toRefresh.clear();
    });
    this.toRefresh.add(channel);
  }

  /** Re-adds this node's clients (renewing their expiry); sweeps their channels. */
  refresh() {
    if (!this.answering()) return;
    for (const [channel, room] of this.table.rooms) this.refreshChannel(channel, room);
  }

  /** Re-adds one channel's clients here; those whose leave was announced meanwhile are members again. */
  refreshChannel(channel, room) {
    const unannounced = this.unannounced.get(channel);
    let args = [];
    let joins = [];
    for (const [client, { user, member }] of room.clients) {
      if (unannounced?.has(client)) joins.push(client, user ?? '', storedMember(member));
      else args.push(client, user ?? '', storedMember(member));
      if (args.length >= REFRESH_CHUNK * 3) {
        this.reAdd(channel, args);
        args = [];
      }
      if (joins.length >= REFRESH_CHUNK * 3) {
        this.add(channel, joins);
        joins = [];
      }
    }
    if (args.length > 0) this.reAdd(channel, args);
    if (joins.length > 0) this.add(channel, joins);
  }

  reAdd(channel, args) {
    this.run(channel, 'refresh', args).then(([, answers]) => {
      // The arriving client is not left out: its own list may have lost it meanwhile.
      for (let i = 0; i < answers.length; i++) if (answers[i] === 2) this.member(channel, args[3 * i + 1], true, undefined, memberOfStored(args[3 * i + 2]));
    }, ignore);
  }

  /** Resolves once every script call made so far is answered (or failed): a node stopping lets its last leaves reach Redis. */
  settled() {
    return Promise.allSettled([...this.calls]);
  }

  /** Calls the script; its sweep's departures are told here, whoever asked. */
  async run(channel, op, args) {
    const tag = this.tagOf(channel);
    const publish = this.namespaceOf(channel).joinLeave ? this.publish : '';
    const call = this.redis.gw_presence(`${tag}:presence`, `${tag}:presence:exp`, `${tag}:presence:users`, `${tag}:presence:digest`, `${tag}:presence:gone`, op, this.ttlMs, channel, publish, tag, ...args);
    this.calls.add(call);
    try {
      const answer = await call;
      for (const user of answer[0]) this.member(channel, user, false);
      return answer;
    } finally {
      this.calls.delete(call);
    }
  }

  onMember(listener) {
    this.members.push(listener);
  }

  member(channel, user, present, client, member) {
    for (const listener of this.members) listener(channel, user, present, client, member);
  }

  stop() {
    clearInterval(this.refresher);
    this.diffs.stop();
  }
}

/** The stored member of an entry "<stored member>\n<user>" (./presence.lua). */
function storedOf(value) {
  return value.slice(0, value.indexOf('\n'));
}

function ignore() {}
