// A channel's members as this worker knows them, for the SYNC each attach
// gets: read once, when the first of the worker's live subscribers asks,
// then kept from the channel's own presence events, which reach this worker
// in the channel's order with its messages (./primary.js). An attach to a
// channel the worker already routes is told its members without asking the
// primary, as a native subscribe to such a channel asks nothing.
//
// The read and the events meet exactly: events from the moment the view is
// made wait for the read, then are applied over it in order, each only where
// it is newer than what the view holds for its member (ably-js's own rule,
// RTP2b: by msgSerial and index within a connection, by timestamp for an
// event the connection did not send), so an event the read already shows
// changes nothing. A message missing from the channel's order (a gap: the
// sequence started over, history that could not fill an outage) ends the
// view: the next attach reads again.
import { isPresenceEvent, PresenceAction } from './presence.js';

export class MembersView {
  /**
   * @param {number} seq where the channel stands here now: the view follows the messages after it
   * @param {Promise<object[]>} read the members read (./presence.js read), asked now
   * @param {() => void} ended called once when a gap ends the view
   */
  constructor(seq, read, ended) {
    this.seq = seq;
    this.ended = ended;
    this.members = new Map(); // memberKey -> its PRESENT message
    this.waiting = []; // the events while the read is under way; undefined once applied
    this.ready = read.then((present) => {
      for (const message of present) this.apply(message);
      for (const event of this.waiting) this.apply(event);
      this.waiting = undefined;
    });
  }

  /** The members now, as PRESENT messages (once `ready`). */
  list() {
    return [...this.members.values()];
  }

  /** The channel's next message here (lib/session/fan-out.js): a presence event changes the view. */
  follow(seq, dataJson) {
    if (seq !== this.seq + 1) return this.ended();
    this.seq = seq;
    if (!isPresenceEvent(dataJson)) return;
    let event;
    try {
      event = JSON.parse(dataJson);
    } catch {
      return this.ended(); // not the gateway's own event (written into Redis by hand?): read again rather than guess
    }
    if (this.waiting !== undefined) this.waiting.push(event);
    else this.apply(event);
  }

  apply(message) {
    const key = `${message.connectionId}:${message.clientId}`;
    const held = this.members.get(key);
    if (held !== undefined && !newerThan(message, held)) return;
    if (message.action === PresenceAction.LEAVE) this.members.delete(key);
    else this.members.set(key, { ...message, action: PresenceAction.PRESENT });
  }
}

/** Whether presence message `item` supersedes `held` for one member, as ably-js decides it. */
function newerThan(item, held) {
  if (synthesized(item) || synthesized(held)) return item.timestamp >= held.timestamp;
  const [, itemSerial, itemIndex] = item.id.split(':').map(Number);
  const [, heldSerial, heldIndex] = held.id.split(':').map(Number);
  return itemSerial === heldSerial ? itemIndex > heldIndex : itemSerial > heldSerial;
}

/** A message its connection did not send (a departure the gateway tells): its id is not the connection's. */
function synthesized({ id, connectionId }) {
  return typeof id !== 'string' || typeof connectionId !== 'string' || !id.startsWith(connectionId);
}
