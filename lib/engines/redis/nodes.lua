-- The registry of live gateway nodes (./calls.js), a sorted set of node ids
-- scored by when (ms, Redis's clock, so the nodes' own clocks do not
-- matter) each entry lapses unless its node renews it.
-- KEYS[1] {gw:control}:nodes (the control channel's slot, for ./call.lua)
-- ARGV[1] node id   ARGV[2] entry TTL, ms
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
return 1
