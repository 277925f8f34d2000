// Departure markers shared by the gateway nodes (the grace period of member
// events: lib/webhooks/members.js, which says how they are used). A marker is
// a key `gw:{<channel>}:gone:<user>` holding the departure's token, in the
// channel's slot under Redis Cluster; it expires on its own a while after the
// grace, so a node that died before settling leaves nothing behind.
import { readFileSync } from 'node:fs';

/** ms a marker outlives its grace: room for the departing node's settle to arrive. */
const MARGIN_MS = 60000;

/** @implements {import('../index.js').Departures} */
export class RemoteDepartures {
  /** @param {import('ioredis').Redis | import('ioredis').Cluster} redis the command connection */
  constructor(redis) {
    this.redis = redis;
    redis.defineCommand('gw_settle', { numberOfKeys: 1, lua: readFileSync(new URL('./departures.lua', import.meta.url), 'utf8') });
  }

  async depart(channel, user, token, graceMs) {
    await this.redis.set(keyOf(channel, user), token, 'PX', graceMs + MARGIN_MS);
  }

  async arrive(channel, user) {
    return (await this.redis.del(keyOf(channel, user))) === 1;
  }

  async settle(channel, user, token) {
    return (await this.redis.gw_settle(keyOf(channel, user), token)) === 1;
  }
}

function keyOf(channel, user) {
  return `gw:{${channel}}:gone:${user}`;
}
