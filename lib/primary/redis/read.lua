-- Where a channel stands, for a subscribe: its epoch (drawn now if it has
-- none, so a subscriber's epoch is the one its later messages carry), its
-- seq, and the history entries after a seq, read in the same atomic step so
-- they end exactly at that seq.
--
-- KEYS[1] the channel's hash   KEYS[2] its history stream
-- ARGV[1] an epoch for a new sequence   ARGV[2] history TTL in seconds
-- ARGV[3] entries after this seq are wanted ('' for none)
-- Returns {seq, epoch, {{id, {'d', data}}, ...}}.
redis.call('HSETNX', KEYS[1], 'e', ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[2])
local state = redis.call('HMGET', KEYS[1], 's', 'e')
local seq = tonumber(state[1]) or 0
local entries = {}
if ARGV[3] ~= '' and tonumber(ARGV[3]) < seq then
  entries = redis.call('XRANGE', KEYS[2], tonumber(ARGV[3]) + 1, seq)
end
return {seq, state[2], entries}
