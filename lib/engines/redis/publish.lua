-- One publish on a channel, atomically: the next seq, the history entry, the
-- live message. Invariant: the stream's entries are the channel's latest
-- messages with no gap, entry id <seq>-0, and the live message of seq N is
-- published after every message < N; so seq, history and live order agree on
-- every node. The hash and the stream expire together, --history-ttl after
-- the last publish; a hash that is gone starts a new sequence with a new epoch.
--
-- KEYS[1] the channel's hash {s: seq, e: epoch}   KEYS[2] its history stream
-- ARGV[1] data (JSON)   ARGV[2] an epoch for a new sequence   ARGV[3] history size
-- ARGV[4] history TTL in seconds   ARGV[5] the pub/sub channel
-- ARGV[6] 'PUBLISH', or 'SPUBLISH' under Redis Cluster (the channel's own shard)
-- Returns {seq, epoch}.
local seq = redis.call('HINCRBY', KEYS[1], 's', 1)
if seq == 1 then
  redis.call('HSETNX', KEYS[1], 'e', ARGV[2])
  redis.call('DEL', KEYS[2]) -- a stream that outlived its hash belongs to the old epoch
end
local epoch = redis.call('HGET', KEYS[1], 'e')
redis.call('EXPIRE', KEYS[1], ARGV[4])
if ARGV[3] ~= '0' then
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[3], seq .. '-0', 'd', ARGV[1])
  redis.call('EXPIRE', KEYS[2], ARGV[4])
end
redis.call(ARGV[6], ARGV[5], seq .. ' ' .. epoch .. ' ' .. ARGV[1])
return {seq, epoch}
