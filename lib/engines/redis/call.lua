-- A cluster call (./calls.js) published on the control channel, and how many
-- other nodes are alive now by the registry (./nodes.lua), in one step: a
-- node that missed the call is known to have.
-- KEYS[1] {gw:control}:nodes
-- ARGV[1] 'publish', or 'spublish' under Redis Cluster   ARGV[2] the control
-- channel (its slot is the registry's)   ARGV[3] the message   ARGV[4] the
-- asking node's id
-- Returns {receivers, other live nodes}.
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local others = redis.call('ZCOUNT', KEYS[1], now, '+inf')
local mine = redis.call('ZSCORE', KEYS[1], ARGV[4])
if mine and tonumber(mine) >= now then others = others - 1 end
return {redis.call(ARGV[1], ARGV[2], ARGV[3]), others}
