-- Connection counts per key across gateway nodes (users under
-- --max-conns-per-user, Pusher apps under their maxConnections), each scope
-- under its own prefix, `gw:{#users}:` or `gw:{#apps}:`. Each node mirrors its own
-- connection count per key into its hash `<prefix><node>`, and renews its
-- entry in `<prefix>nodes` (scored by Redis' clock) and that hash's expiry every few
-- seconds; a node that stops (crashed, restarted under a new id) drops out of
-- the sums within the expiry. Invariant: a user's connections cluster-wide are
-- the sum of their counts in the hashes of the nodes in `gw:{#users}:nodes`, and an
-- admission that would take that sum past the cap changes nothing.
--
-- Keys are built here from the node id and KEYS[1]'s prefix, all under its hash tag (no channel name
-- holds a #), so under Redis Cluster they live in the one slot of KEYS[1], `<prefix>nodes`.
-- ARGV[1] 'admit' | 'set' | 'beat'   ARGV[2] node id   ARGV[3] node TTL in seconds
-- admit: ARGV[4] user, ARGV[5] this node's count with the new connection,
--        ARGV[6] cap; returns 1 (and stores the count) or 0
-- set:   ARGV[4] user, ARGV[5] this node's count (0 removes it)
-- beat:  renews the node; drops nodes that stopped renewing
local prefix = string.sub(KEYS[1], 1, -6) -- KEYS[1] without 'nodes'
local own = prefix .. ARGV[2]
local ttl = tonumber(ARGV[3])
if ARGV[1] == 'beat' then
  local now = tonumber(redis.call('TIME')[1])
  redis.call('ZADD', KEYS[1], now, ARGV[2])
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - ttl)
  redis.call('EXPIRE', own, ttl)
  return 1
end
local user, count = ARGV[4], tonumber(ARGV[5])
if ARGV[1] == 'admit' then
  local held = count
  for _, node in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
    if node ~= ARGV[2] then held = held + (tonumber(redis.call('HGET', prefix .. node, user)) or 0) end
  end
  if held > tonumber(ARGV[6]) then return 0 end
end
if count > 0 then
  redis.call('HSET', own, user, count)
  redis.call('EXPIRE', own, ttl)
else
  redis.call('HDEL', own, user)
end
return 1
