-- One publish on a channel, atomically: the next seq, the history entry, the
-- live message. Invariant: the stream's entries are the channel's latest
-- messages with no gap, entry id <seq>-0, and the live message of seq N is
-- published after every message < N; so seq, history and live order agree on
-- every node. (Under --redis-wait-replicas the live messages are published
-- later, by ./publisher.js, and may arrive out of order: ../redis.js puts them
-- back.) The hash and the stream expire together, the namespace's
-- history TTL after the last publish; a hash that is gone starts a new
-- sequence with a new epoch.
--
-- Skipped publishes (checked first, so they take no seq and leave no trace):
-- an idempotency key seen on this channel within its window answers the
-- first publish's seq and epoch ('duplicate'); a version not above the
-- channel's last accepted one (the hash's field v) answers where the channel
-- stands ('stale'). Keys are held at most ARGV[9] per channel, the oldest
-- dropped first; being here, one script per channel, two nodes cannot both
-- accept a duplicate.
--
-- KEYS[1] the channel's hash {s: seq, e: epoch, v: version}   KEYS[2] its history stream
-- KEYS[3] its idempotency keys, a hash key -> "<seq> <epoch>"
-- KEYS[4] the same keys in a sorted set, scored by when they were seen (ms)
-- ARGV[1] data (JSON)   ARGV[2] an epoch for a new sequence   ARGV[3] history size
-- ARGV[4] history TTL in seconds   ARGV[5] the pub/sub channel
-- ARGV[6] idempotency key ('' none)   ARGV[7] version ('' none)
-- ARGV[8] the keys' window in ms   ARGV[9] keys held per channel
-- ARGV[10] 'publish', or 'spublish' under Redis Cluster (the channel's own shard),
--          or '' under --redis-wait-replicas: published once replicas hold it (./publisher.js)
-- ARGV[11] a client id the live message is not delivered to ('' none): it
--          follows the epoch after a slash (an epoch is base 36)
-- Returns {seq, epoch, skipped or false, keys dropped}.
local key = ARGV[6]
local now = 0
if key ~= '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local expired = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now - tonumber(ARGV[8]), 'LIMIT', 0, 1000)
  if #expired > 0 then
    redis.call('ZREM', KEYS[4], unpack(expired))
    redis.call('HDEL', KEYS[3], unpack(expired))
  end
  local first = redis.call('HGET', KEYS[3], key)
  if first then
    local space = string.find(first, ' ')
    return {tonumber(string.sub(first, 1, space - 1)), string.sub(first, space + 1), 'duplicate', 0}
  end
end
if ARGV[7] ~= '' then
  local state = redis.call('HMGET', KEYS[1], 's', 'e', 'v')
  if tonumber(ARGV[7]) <= (tonumber(state[3]) or 0) then
    return {tonumber(state[1]) or 0, state[2], 'stale', 0}
  end
end
local seq = redis.call('HINCRBY', KEYS[1], 's', 1)
if seq == 1 then
  redis.call('HSETNX', KEYS[1], 'e', ARGV[2])
  redis.call('DEL', KEYS[2]) -- a stream that outlived its hash belongs to the old epoch
end
local epoch = redis.call('HGET', KEYS[1], 'e')
if ARGV[7] ~= '' then redis.call('HSET', KEYS[1], 'v', ARGV[7]) end
redis.call('EXPIRE', KEYS[1], ARGV[4])
if ARGV[3] ~= '0' then
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[3], seq .. '-0', 'd', ARGV[1])
  redis.call('EXPIRE', KEYS[2], ARGV[4])
end
if ARGV[10] ~= '' then
  local sent = epoch
  if ARGV[11] ~= '' then sent = epoch .. '/' .. ARGV[11] end
  redis.call(ARGV[10], ARGV[5], seq .. ' ' .. sent .. ' ' .. ARGV[1])
end
local dropped = 0
if key ~= '' then
  redis.call('HSET', KEYS[3], key, seq .. ' ' .. epoch)
  redis.call('ZADD', KEYS[4], now, key)
  local over = redis.call('ZCARD', KEYS[4]) - tonumber(ARGV[9])
  if over > 0 then
    local oldest = redis.call('ZPOPMIN', KEYS[4], over)
    for i = 1, #oldest, 2 do redis.call('HDEL', KEYS[3], oldest[i]) end
    dropped = over
  end
  local window = math.ceil(tonumber(ARGV[8]) / 1000)
  redis.call('EXPIRE', KEYS[3], window)
  redis.call('EXPIRE', KEYS[4], window)
end
return {seq, epoch, false, dropped}
