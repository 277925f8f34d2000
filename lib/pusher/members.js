// Pusher's member_added and member_removed, in the primary. The engine's
// per-user view of presence (onMember: once for the whole cluster, when a
// user's first connection enters a presence channel and when its last one
// leaves, a dead worker's and a crashed node's included) is published as an
// event on the channel's members channel (./channels.js), which each of its
// subscribers holds beside it, so every subscriber on every worker and node
// gets it once, and a presence-cache channel's last event stays the app's.
// The connection whose arrival made a member is left out: its
// subscription_succeeded already lists itself.
import { isInternal, isPresence, kindOf, membersChannel, pusherName } from './channels.js';
import { eventData } from './frames.js';

/** @param {import('../engines/index.js').Engine} engine */
export function publishMembers(engine) {
  engine.onMember((channel, user, present, client, member) => {
    if (!isInternal(channel) || !isPresence(kindOf(pusherName(channel)))) return;
    const data = present ? JSON.stringify({ user_id: user, user_info: member.info }) : JSON.stringify({ user_id: user });
    const event = present ? 'pusher_internal:member_added' : 'pusher_internal:member_removed';
    engine.publish({ channel: membersChannel(channel), data: JSON.stringify(eventData(event, data)), exclude: present ? client : undefined });
  });
}

