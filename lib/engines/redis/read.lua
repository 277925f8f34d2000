-- Where a channel stands, for a subscribe: its epoch (drawn now if it has
-- none, so a subscriber's epoch is the one its later messages carry), its
-- seq, and the history entries after a seq, read in the same atomic step so
-- they end exactly at that seq.
--
-- KEYS[1] the channel's hash   KEYS[2] its history stream
-- ARGV[1] an epoch for a new sequence   ARGV[2] history TTL in seconds
-- ARGV[3] entries after this seq are wanted ('' for none)
-- ARGV[4] the epoch that seq belongs to ('' if none): when the channel is in
--         another one (Redis lost its state), all of the new one's entries
-- ARGV[5] the last seq the asking node delivered in that epoch, ARGV[6] its
--         data ('' if unknown): a Redis behind it, or holding other data
--         there, lost that tail (a failover to a replica that lacked it), so
--         the sequence starts over in a new epoch: subscribers are told, and
--         no seq is given to two messages
-- ARGV[7] '1': the latest entry is wanted too (a subscribe in a `latest` namespace)
-- Returns {seq, epoch, {{id, {'d', data}}, ...}}.
local last = tonumber(ARGV[5])
if last ~= nil and ARGV[4] ~= '' and redis.call('HGET', KEYS[1], 'e') == ARGV[4] then
  local lost = (tonumber(redis.call('HGET', KEYS[1], 's')) or 0) < last
  if not lost and ARGV[6] ~= '' then
    local entry = redis.call('XRANGE', KEYS[2], last, last)
    lost = entry[1] ~= nil and entry[1][2][2] ~= ARGV[6]
  end
  if lost then redis.call('DEL', KEYS[1], KEYS[2]) end
end
redis.call('HSETNX', KEYS[1], 'e', ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[2])
local state = redis.call('HMGET', KEYS[1], 's', 'e')
local seq = tonumber(state[1]) or 0
local from = tonumber(ARGV[3])
if from ~= nil and ARGV[4] ~= '' and ARGV[4] ~= state[2] then from = 0 end
if ARGV[7] == '1' and seq > 0 and (from == nil or from >= seq) then from = seq - 1 end
local entries = {}
if from ~= nil and from < seq then
  entries = redis.call('XRANGE', KEYS[2], from + 1, seq)
end
return {seq, state[2], entries}
