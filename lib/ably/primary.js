// Ably's protocol in the primary, beside the engine: its members' arrivals
// and departures. The engine tells each member (a user of a members channel,
// ./presence.js) once for the whole cluster when its first entry arrives and
// when its last one is gone, a dead worker's and a crashed node's included:
// each is published on the channel itself, in its order with the messages (a
// PRESENCE to the clients: ./transport.js), so every attached subscriber on
// every worker and node gets it once, and one that recovers the channel gets
// what it missed there too. An arrival is the member's ENTER (the message its
// connection sent); a departure its LEAVE, its id the connection's and the
// msgSerial of its last generation's PRESENCE with an index past any real
// one, so ably-js takes it as newer than that generation and older than
// anything the connection sent later (an ENTER again overtaken by this LEAVE
// is not undone by it); a crashed node's member, whose entry the engine no
// longer names, leaves by its timestamp (an id not the connection's).
// Without an app (or with --no-ably), nothing.
import { channelOfMembers, isMembersChannel } from './channels.js';
import { MAX_ITEMS, memberOfEntry, PresenceAction, presenceEventJson } from './presence.js';

/**
 * @param {object} options config, engine, appsServed (whether any app is configured)
 * @returns {undefined} nothing is queued to send at the end
 */
export function attachAbly({ config, engine, appsServed }) {
  if (!appsServed || !config.ably) return undefined;
  engine.onMember((channel, memberKey, present, entry, member) => {
    if (!isMembersChannel(channel)) return;
    if (present) return tell(engine, channel, { ...member.info, action: PresenceAction.ENTER });
    const colon = memberKey.indexOf(':');
    const [connectionId, clientId] = [memberKey.slice(0, colon), memberKey.slice(colon + 1)];
    // MAX_ITEMS: past the last index a PRESENCE may hold.
    const id = entry === undefined ? `left:${memberKey}` : `${connectionId}:${memberOfEntry(entry).msgSerial}:${MAX_ITEMS}`;
    tell(engine, channel, { id, action: PresenceAction.LEAVE, clientId, connectionId, timestamp: Date.now() });
  });
  return undefined;
}

function tell(engine, members, message) {
  engine.publish({ channel: channelOfMembers(members), data: presenceEventJson(message) });
}
