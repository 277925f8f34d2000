// Ably presence at the edge. A member is a connection and a clientId (Ably's
// memberKey, `<connectionId>:<clientId>`); who is present on a channel is
// the engine's presence entries on its members channel (./channels.js), so
// the members are exact across workers and nodes and a dead worker's or
// node's leave as every other presence entry does. A member is the engine's
// user, each of its entries one generation of it
// (`<memberKey>#<generation>.<msgSerial>`): an update adds the next
// generation before it takes out the one before, so the engine's entry
// changes while the member stays present, and the engine, counting a user's
// entries across the cluster, tells its first one's arrival and its last
// one's departure once (./primary.js publishes them: ENTER, LEAVE). An
// UPDATE is published here, acknowledged once stored. Every event goes on
// the channel itself: its data starts with its action, which no message's
// does, so the transport and the history tell them apart.
//
// A connection closed by its client (CLOSE) or detached from the channel
// leaves at once; a dropped socket's members stay for GRACE_MS, so a client
// that resumes the connection (./resume.js) on any worker or node finds
// them: its next attach of the channel adopts them (a later generation of
// the same member: no one is told, it never left).
//
// To the primary: ['pjoin', members channel, entry, {user: memberKey, info: presence message}]
//                 ['pleave', members channel, entry]
import { memberOf } from '../core/identity.js';
import { Op } from '../core/ipc.js';
import { kSession } from '../core/symbols.js';
import { channelOfMembers } from './channels.js';
import { AblyCode, AblyError } from './errors.js';
import { messageData } from './messages.js';
import { MembersView } from './members-view.js';

export const PresenceAction = Object.freeze({ PRESENT: 1, ENTER: 2, LEAVE: 3, UPDATE: 4 });

const EVENT_START = '{"action":';
export const MAX_ITEMS = 100; // in one PRESENCE: its indexes run to MAX_ITEMS - 1
const GRACE_MS = 15000; // Ably's: how long a dropped connection's members stay

/** A presence event as the channel carries it: its action first. */
export function presenceEventJson(message) {
  return JSON.stringify(presenceEvent(message));
}

function presenceEvent(message) {
  return { action: message.action, ...message };
}

/** Whether data a channel carries is a presence event (a message's starts with its id: ./messages.js). */
export function isPresenceEvent(dataJson) {
  return dataJson.startsWith(EVENT_START);
}

/**
 * @param {string} entry an engine client of a members channel
 * @returns {{memberKey: string, connectionId: string, clientId: string, generation: number, msgSerial: number}}
 *   its member, the generation, and the msgSerial of the PRESENCE that made it
 */
export function memberOfEntry(entry) {
  const hash = entry.lastIndexOf('#');
  const colon = entry.indexOf(':');
  const dot = entry.indexOf('.', hash);
  return {
    memberKey: entry.slice(0, hash),
    connectionId: entry.slice(0, colon),
    clientId: entry.slice(colon + 1, hash),
    generation: Number(entry.slice(hash + 1, dot)),
    msgSerial: Number(entry.slice(dot + 1))
  };
}

/**
 * The members a presence read lists, one per memberKey (its newest
 * generation, where an update is under way), as Ably's PRESENT messages.
 * @param {Object<string, import('../core/identity.js').Member>} clients the engine's answer
 * @returns {object[]}
 */
export function presentMembers(clients) {
  const newest = new Map(); // memberKey -> [generation, presence message]
  for (const [entry, member] of Object.entries(clients)) {
    const { memberKey, generation } = memberOfEntry(entry);
    const held = newest.get(memberKey);
    if (held === undefined || held[0] < generation) newest.set(memberKey, [generation, member.info]);
  }
  return Array.from(newest.values(), ([, info]) => ({ ...info, action: PresenceAction.PRESENT }));
}

export class AblyPresence {
  /**
   * @param {object} options
   * @param {import('../worker/relay.js').WorkerRelay} options.relay
   * @param {import('../session/presence.js').WorkerPresence} options.presence the presence reads
   * @param {import('../core/commands.js').Commands} options.commands Ably's core: an UPDATE is published through it
   */
  constructor({ relay, presence, commands }) {
    this.relay = relay;
    this.presence = presence;
    this.commands = commands;
  }

  /**
   * A PRESENCE ProtocolMessage's items, each entered, updated or left in
   * order; the connection's identity names the member (a wildcard one may
   * name any clientId).
   * @param {string} members the channel's members channel
   * @returns {Promise<void>} once its UPDATEs are stored
   * @throws {AblyError} 40000, 40012, 91000 (no clientId to be present as)
   */
  update(ws, members, items, msgSerial) {
    if (!Array.isArray(items) || items.length === 0 || items.length > MAX_ITEMS) throw new AblyError(AblyCode.BAD_REQUEST, `a PRESENCE holds 1 to ${MAX_ITEMS} members`);
    const session = ws[kSession];
    const who = { clientId: session.clientId, wildcard: session.wildcard };
    const timestamp = Date.now();
    // Every item checked before any is applied: a refusal changes nothing.
    const messages = items.map((item, i) => {
      const action = item?.action;
      if (action !== PresenceAction.ENTER && action !== PresenceAction.UPDATE && action !== PresenceAction.LEAVE) throw new AblyError(AblyCode.BAD_REQUEST, 'a presence action is enter, update or leave');
      const message = messageData({ ...item, action: undefined, name: undefined }, who, { id: `${session.connectionId}:${msgSerial}:${i}`, connectionId: session.connectionId, timestamp });
      if (message.clientId === undefined) throw new AblyError(AblyCode.NO_CLIENT_ID, 'presence needs a clientId: this connection has none');
      message.name = undefined;
      message.action = action;
      return message;
    });
    return Promise.all(messages.map((message) => this.apply(ws, members, message, msgSerial))).then(() => undefined);
  }

  /** @returns {Promise<unknown>|undefined} an UPDATE's publish */
  apply(ws, members, message, msgSerial) {
    const entry = this.entryOf(ws, members, message.clientId);
    if (message.action === PresenceAction.LEAVE) {
      if (entry !== undefined) this.leave(ws, members, message.clientId, entry);
      return undefined;
    }
    message.action = entry === undefined ? PresenceAction.ENTER : PresenceAction.UPDATE;
    this.add(ws, members, message, msgSerial, entry);
    // A first generation's ENTER is the engine's to tell (./primary.js); an update's is told here.
    if (entry === undefined) return undefined;
    return this.commands.publish(ws, channelOfMembers(members), presenceEvent(message), undefined, undefined, message.id);
  }

  /** @returns {string|undefined} the entry of the connection's member `clientId` on a members channel; undefined: not present */
  entryOf(ws, members, clientId) {
    return ws[kSession].entered?.get(members)?.get(clientId);
  }

  /** Adds the member's next generation, then takes out the one it replaces. */
  add(ws, members, message, msgSerial, replaced) {
    const session = ws[kSession];
    // Later than any generation of this connectionId before, on any worker: the clock's ms, then one more each.
    const generation = Math.max(Date.now(), session.lastGeneration + 1);
    session.lastGeneration = generation;
    const memberKey = `${session.connectionId}:${message.clientId}`;
    const entry = `${memberKey}#${generation}.${msgSerial}`;
    this.relay.send([Op.PRESENCE_JOIN, members, entry, memberOf(memberKey, message)]);
    if (replaced !== undefined) this.relay.send([Op.PRESENCE_LEAVE, members, replaced]);
    const entered = (session.entered ??= new Map());
    if (!entered.has(members)) entered.set(members, new Map());
    entered.get(members).set(message.clientId, entry);
  }

  leave(ws, members, clientId, entry) {
    const { entered } = ws[kSession];
    this.relay.send([Op.PRESENCE_LEAVE, members, entry]);
    const mine = entered.get(members);
    mine.delete(clientId);
    if (mine.size === 0) entered.delete(members);
  }

  /** Every member the connection holds on one members channel (a detach), or on all (a close), leaves now. */
  leaveAll(ws, members) {
    const { entered } = ws[kSession];
    if (entered === undefined) return;
    for (const [channel, mine] of [...entered]) {
      if (members !== undefined && channel !== members) continue;
      for (const [clientId, entry] of [...mine]) this.leave(ws, channel, clientId, entry);
    }
  }

  /** The connection is gone: what it still holds leaves after the grace (a resumed connection has adopted them by then, or they go). */
  closed(ws) {
    if (ws[kSession].entered === undefined) return;
    setTimeout(() => this.leaveAll(ws), GRACE_MS).unref();
  }

  /**
   * The members of this connectionId a read found that the connection does
   * not hold: a resumed connection's own, from its dropped socket. They are
   * adopted: a later generation of each (the engine tells no one: the
   * member was never absent), which the old one's leave after its grace
   * leaves present.
   * @param {object[]} present the read's PRESENT messages
   */
  adopt(ws, members, present) {
    const { connectionId } = ws[kSession];
    for (const message of present) {
      if (message.connectionId !== connectionId || this.entryOf(ws, members, message.clientId) !== undefined) continue;
      this.add(ws, members, { ...message, action: PresenceAction.ENTER }, msgSerialOf(message.id));
    }
  }

  /**
   * @returns {Promise<object[]>} the channel's members, as PRESENT messages
   * @throws {import('../core/errors.js').GatewayError} too_many, unavailable
   */
  read(members) {
    return this.presence.read(members, false).then(({ clients }) => presentMembers(clients));
  }

  /**
   * The members of a channel this worker routes (`local`, its record
   * here, live), from the worker's view of them (./members-view.js), made
   * with one read when the first asks.
   * @param {import('../session/subscriptions.js').LocalChannel} local
   * @returns {Promise<object[]>} as PRESENT messages
   * @throws {import('../core/errors.js').GatewayError} the read's: the next asks again
   */
  present(local, members) {
    let view = local.follower;
    if (view === undefined) {
      const ended = () => {
        if (local.follower === view) local.follower = undefined;
      };
      view = local.follower = new MembersView(local.seq, this.read(members), ended);
      view.ready.catch(ended);
    }
    return view.ready.then(() => view.list());
  }
}

/** The msgSerial a presence message's id (`<connectionId>:<msgSerial>:<index>`) carries; 0 for another id. */
function msgSerialOf(id) {
  const serial = Number(id.split(':')[1]);
  return Number.isSafeInteger(serial) ? serial : 0;
}
