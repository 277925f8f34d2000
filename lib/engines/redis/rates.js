// Each Pusher app's backend events per second across gateway nodes: one
// counter per app and second in Redis, taken from only while the take stays
// within the limit (one script: a check and an increment in one step), gone
// two seconds later. lib/primary/app-rates.js asks here.
const SCRIPT = `
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
if used + tonumber(ARGV[1]) > tonumber(ARGV[2]) then return 0 end
redis.call('INCRBY', KEYS[1], ARGV[1])
redis.call('EXPIRE', KEYS[1], 2)
return 1`;

export class RemoteRates {
  /** @param {import('ioredis').Redis} redis the command connection */
  constructor(redis) {
    this.redis = redis;
    redis.defineCommand('gw_rate', { numberOfKeys: 1, lua: SCRIPT });
  }

  /**
   * @returns {Promise<boolean>} whether `events` more stay within `limit` this second; rejects while Redis cannot answer
   */
  async take(appId, events, limit) {
    if (this.redis.status !== 'ready') throw new Error('redis not ready');
    const second = Math.floor(Date.now() / 1000);
    return (await this.redis.gw_rate(`gw:{#rates}:${appId}:${second}`, String(events), String(limit))) === 1;
  }
}
