// Ably's protocol in the primary, beside the engine: its presence events.
// The engine tells each presence entry of a members channel
// (./presence.js) once for the whole cluster when it is added and when it
// is gone, a dead worker's and a crashed node's included; each is published
// on the channel itself, in its order with the messages (a PRESENCE to the
// clients: ./transport.js), so every attached subscriber on every worker and
// node gets it once, and one that recovers the channel gets what it missed
// there too: an entry added is the
// member's ENTER or UPDATE (the message the connection sent), the last of a
// member's generations gone is its LEAVE. A generation an update replaced
// goes quietly: its member is still present; one a resumed connection
// adopted (PRESENT) comes quietly, unless its member had left meanwhile
// (then it is an ENTER again). Without an app (or with --no-ably), nothing.
import { channelOfMembers, isMembersChannel } from './channels.js';
import { memberOfEntry, PresenceAction, presenceEventJson } from './presence.js';

/**
 * @param {object} options config, engine, appsServed (whether any app is configured)
 * @returns {undefined} nothing is queued to send at the end
 */
export function attachAbly({ config, engine, appsServed }) {
  if (!appsServed || !config.ably) return undefined;
  const generations = new Map(); // `<members channel>\n<memberKey>` -> generations added here and not gone
  engine.onMember((channel, entry, present, client, member) => {
    if (!isMembersChannel(channel)) return;
    const { memberKey, connectionId, clientId } = memberOfEntry(entry);
    const key = `${channel}\n${memberKey}`;
    const held = generations.get(key) ?? 0;
    if (present) {
      generations.set(key, held + 1);
      const { info } = member;
      if (info.action !== PresenceAction.PRESENT) tell(engine, channel, info);
      else if (held === 0) tell(engine, channel, { ...info, action: PresenceAction.ENTER });
      return;
    }
    if (held > 1) return void generations.set(key, held - 1);
    generations.delete(key);
    // An id that does not start with the connection's: ably-js orders it by its timestamp, the leave's own time.
    tell(engine, channel, { id: `left:${entry}`, action: PresenceAction.LEAVE, clientId, connectionId, timestamp: Date.now() });
  });
  return undefined;
}

function tell(engine, members, message) {
  engine.publish({ channel: channelOfMembers(members), data: presenceEventJson(message) });
}
