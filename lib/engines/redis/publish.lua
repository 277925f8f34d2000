-- A batch of publishes, each on its channel atomically: the next seq, the
-- history entry, the live message. Invariant: the stream's entries are the
-- channel's latest messages with no gap, entry id <seq>-0, and the live
-- message of seq N is published after every message < N; so seq, history and
-- live order agree on every node. The batch runs in its order, so a channel's
-- publishes in it take their seqs in that order. (Under
-- --redis-wait-replicas the live messages are published later, by
-- ./publisher.js, and may arrive out of order: ../redis.js puts them back.)
-- The hash and the stream expire together, the namespace's history TTL after
-- the last publish; a hash that is gone starts a new sequence with a new
-- epoch.
--
-- One publish that Redis fails (a key of another type, out of memory) is
-- answered 'failed' with Redis's words, and the others go on: each runs
-- under pcall. What it wrote before the failure stays (a script is not
-- rolled back): at worst a seq taken with no message, which a subscriber
-- sees as a gap the history cannot fill, never as a wrong message.
--
-- Skipped publishes (checked first, so they take no seq and leave no trace):
-- an idempotency key seen on this channel within its window answers the
-- first publish's seq and epoch ('duplicate'); a version not above the
-- channel's last accepted one (the hash's field v) answers where the channel
-- stands ('stale'). Keys are held at most ARGV[1] per channel, the oldest
-- dropped first; being here, one script per channel, two nodes cannot both
-- accept a duplicate.
--
-- KEYS, 4 per channel of the batch: the channel's hash
-- {s: seq, e: epoch, v: version}, its history stream, its idempotency keys
-- (a hash key -> "<seq> <epoch>"), the same keys in a sorted set scored by
-- when they were seen (ms).
-- ARGV[1] idempotency keys held per channel
-- ARGV[2] 'publish', or 'spublish' under Redis Cluster (the channel's own shard),
--         or '' under --redis-wait-replicas: published once replicas hold it (./publisher.js)
-- then CHANNEL_FIELDS per channel, in KEYS' order: its pub/sub name, an epoch
-- for a new sequence, its history size, its history TTL in seconds, its
-- idempotency keys' window in ms;
-- then PUBLISH_FIELDS per publish, in the batch's order: its channel (1 for
-- the first), data (JSON), idempotency key ('' none), version ('' none), a
-- client id the live message is not delivered to ('' none: it follows the
-- epoch after a slash, an epoch being base 36).
-- Returns 3 per publish: seq, epoch, '' or 'duplicate' or 'stale' or 'failed'
-- (then 0 and Redis's error instead of seq and epoch); then the idempotency
-- keys dropped in all.
local CHANNEL_FIELDS = 5
local PUBLISH_FIELDS = 5
local channels = #KEYS / 4
local first = 2 + channels * CHANNEL_FIELDS -- the ARGV before the first publish's
local cap = tonumber(ARGV[1])
local command = ARGV[2]
local now -- ms, read once: Redis's clock does not move during a script
local renewed = {} -- hash key -> its epoch, for a channel whose keys this batch has renewed already

local function clock()
  if now == nil then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return now
end

local dropped = 0

local function publish(a)
  local c = tonumber(ARGV[a + 1]) - 1
  local k, ch = c * 4, 2 + c * CHANNEL_FIELDS
  local state, history, idem, idemt = KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4]
  local size, ttl, window = ARGV[ch + 3], ARGV[ch + 4], tonumber(ARGV[ch + 5])
  local data, key, version, exclude = ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5]
  if key ~= '' then
    local expired = redis.call('ZRANGEBYSCORE', idemt, '-inf', clock() - window, 'LIMIT', 0, 1000)
    if #expired > 0 then
      redis.call('ZREM', idemt, unpack(expired))
      redis.call('HDEL', idem, unpack(expired))
    end
    local seen = redis.call('HGET', idem, key)
    if seen then
      local space = string.find(seen, ' ')
      return tonumber(string.sub(seen, 1, space - 1)), string.sub(seen, space + 1), 'duplicate'
    end
  end
  if version ~= '' then
    local at = redis.call('HMGET', state, 's', 'e', 'v')
    if tonumber(version) <= (tonumber(at[3]) or 0) then return tonumber(at[1]) or 0, at[2], 'stale' end
  end
  local seq = redis.call('HINCRBY', state, 's', 1)
  local epoch = renewed[state]
  if seq == 1 then
    redis.call('HSETNX', state, 'e', ARGV[ch + 2])
    redis.call('DEL', history) -- a stream that outlived its hash belongs to the old epoch
    epoch = nil
  end
  local renew = epoch == nil
  if renew then epoch = redis.call('HGET', state, 'e') end
  if version ~= '' then redis.call('HSET', state, 'v', version) end
  if renew then redis.call('EXPIRE', state, ttl) end
  if size ~= '0' then
    redis.call('XADD', history, 'MAXLEN', '~', size, seq .. '-0', 'd', data)
    if renew then redis.call('EXPIRE', history, ttl) end
  end
  renewed[state] = epoch
  if command ~= '' then
    local sent = epoch
    if exclude ~= '' then sent = epoch .. '/' .. exclude end
    redis.call(command, ARGV[ch + 1], seq .. ' ' .. sent .. ' ' .. data)
  end
  if key ~= '' then
    redis.call('HSET', idem, key, seq .. ' ' .. epoch)
    redis.call('ZADD', idemt, clock(), key)
    local over = redis.call('ZCARD', idemt) - cap
    if over > 0 then
      local oldest = redis.call('ZPOPMIN', idemt, over)
      for i = 1, #oldest, 2 do redis.call('HDEL', idem, oldest[i]) end
      dropped = dropped + over
    end
    local seconds = math.ceil(window / 1000)
    redis.call('EXPIRE', idem, seconds)
    redis.call('EXPIRE', idemt, seconds)
  end
  return seq, epoch, ''
end

local out = {}
for a = first, #ARGV - 1, PUBLISH_FIELDS do
  local ok, seq, epoch, skipped = pcall(publish, a)
  if not ok then
    local err = seq
    if type(err) == 'table' then err = err.err end
    seq, epoch, skipped = 0, tostring(err), 'failed'
  end
  out[#out + 1] = seq
  out[#out + 1] = epoch
  out[#out + 1] = skipped
end
out[#out + 1] = dropped
return out
