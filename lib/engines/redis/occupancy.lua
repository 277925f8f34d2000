-- Cluster-wide occupancy (webhooks: channel_occupied / channel_vacated). Each
-- node tells which channels it routes to its workers; a channel is occupied
-- while at least one node does.
-- KEYS[1] gw:{#occupancy}:routes  sorted set of "<node>\n<channel>", scored by
--         when (ms, Redis' clock) the entry lapses unless its node renews it
-- KEYS[2] gw:{#occupancy}:nodes   hash channel -> how many nodes route it
-- Invariant: nodes[c] is the number of entries "*\n<c>", and a channel's 0->1
-- and 1->0 happen only in here, so each transition is returned to exactly one
-- caller, which announces it: every event once for the whole cluster. An
-- entry whose node stopped renewing it (the node crashed) lapses, and the
-- next call of any node removes it (at most ARGV[3] per call) and reports
-- what that vacated.
-- Both keys under the hash tag {#occupancy} (no channel name holds a #): one
-- slot under Redis Cluster.
-- ARGV[1] node id   ARGV[2] entry TTL, ms   ARGV[3] lapsed entries to remove
-- at most   ARGV[4..] pairs: '+' (routes it, or renews) | '-' (routes it no
-- more), channel; applied in order
-- Returns {lapsed entries removed, channel, 1 (occupied) | 0 (vacated), ...},
-- the changes in the order they happened.
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local changes = {0}

local function left(member)
  local channel = string.sub(member, string.find(member, '\n', 1, true) + 1)
  if redis.call('HINCRBY', KEYS[2], channel, -1) <= 0 then
    redis.call('HDEL', KEYS[2], channel)
    changes[#changes + 1] = channel
    changes[#changes + 1] = 0
  end
end

local lapsed = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[3]))
for _, member in ipairs(lapsed) do
  redis.call('ZREM', KEYS[1], member)
  left(member)
end
changes[1] = #lapsed

local lapses = now + tonumber(ARGV[2])
for i = 4, #ARGV, 2 do
  local channel = ARGV[i + 1]
  local member = ARGV[1] .. '\n' .. channel
  if ARGV[i] == '+' then
    if redis.call('ZADD', KEYS[1], lapses, member) == 1 and redis.call('HINCRBY', KEYS[2], channel, 1) == 1 then
      changes[#changes + 1] = channel
      changes[#changes + 1] = 1
    end
  elseif redis.call('ZREM', KEYS[1], member) == 1 then
    left(member)
  end
end
return changes
