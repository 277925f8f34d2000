// Where a channel lives in Redis: every key under `gw:{<channel>}` (a
// channel name has no braces, so none can reach another's keys or the
// control channel, and a channel's keys share a Redis Cluster slot), and its
// messages PUBLISHed on that name.

const PREFIX = 'gw:{';

/** `gw:{<channel>}`: the channel's pub/sub name, and its keys' common start. */
export function tagOf(channel) {
  return `${PREFIX}${channel}}`;
}

/** The channel a pub/sub name tagOf() made belongs to. */
export function channelOfTag(tag) {
  return tag.slice(PREFIX.length, -1);
}

/** A random 31-bit integer in base 36, offered for a sequence that starts now. */
export function newEpoch() {
  return ((Math.random() * 0x7fffffff) | 0).toString(36);
}
