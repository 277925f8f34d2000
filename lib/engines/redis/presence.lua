-- Presence of one channel across gateway nodes. Redis 7.0 has no expiry per
-- hash field, so (as Centrifugo does) a hash holds the entries and a sorted set
-- their expiry times; every live node re-adds its own clients every third of
-- --presence-ttl, and every call first takes out the entries past their
-- expiry. Invariants:
-- - an entry past its expiry is never answered (each read sweeps first), so a
--   crashed node's clients are gone --presence-ttl after its last refresh;
-- - KEYS[3] holds, per user, that user's entries in KEYS[1]: a user's first
--   entry (0 -> 1) and last one (1 -> 0) are seen by exactly one call, the one
--   that made it, which says so in its answer (the member seam, ../index.js);
-- - a join and a leave are PUBLISHed by the call that added or removed the
--   entry, once, in that order for one client (each node folds them into its
--   presence_diff frames: ../join-leave.js);
-- - KEYS[4] is the XOR of the hashes of the clients in KEYS[1] (clientHash
--   in lib/protocol/presence-hash.js, the same arithmetic), changed with
--   every entry added or taken out;
-- - the sweep leaves a tombstone in KEYS[5] for each entry it takes out (its
--   leave was announced), kept TOMBSTONE_MS: a refresh that re-creates an
--   entry (its node was cut from Redis for longer than the TTL) announces its
--   join again if, and only if, the tombstone is there, and takes it, so
--   exactly one call does; one re-created after Redis lost it all (nothing
--   was announced, no tombstone) stays quiet;
-- - a refresh renews its own clients' expiry before the sweep, so a node
--   never sweeps out (and announces the leave of) a client it still holds.
--
-- KEYS[1] hash client -> "<member>\n<user>" (member: ./stored-member.js, JSON text: never a raw newline)
-- KEYS[2] sorted set client -> expiry (ms, Redis' clock)
-- KEYS[3] hash user -> entries
-- KEYS[4] string: the clients' digest
-- KEYS[5] sorted set client -> when the sweep took its entry out (ms)
-- ARGV[1] 'add' | 'refresh' | 'remove' | 'read' | 'stats'   ARGV[2] TTL in ms
-- ARGV[3] the channel's name (for the events)   ARGV[4] 'publish' | 'spublish',
-- or '' for none (not a joinLeave channel)   ARGV[5] the pub/sub name
-- add:    ARGV[6..] client, user ('' for none), member, ...: answers per client 0 (there already), 1 (added), 2 (added, the user's first)
-- admit:  ARGV[6] the most users, ARGV[7..9] one client as for add: answers as add, or -1 (not added: the
--         channel has that many users and this client's user is not one of them)
-- refresh: as add, renewing the expiry of the node's clients: answers per client 0 (there
--         already, or re-added quietly), 1 (re-added after its leave was announced: its
--         join published again), 2 (as 1, the user's first)
-- remove: ARGV[6..] clients: answers per client 0 (absent), 1 (removed), 2 (removed, the user's last)
-- read:   ARGV[6] the most clients to list: answers [departed, entries] or [departed, count] past it
-- stats:  answers [departed, clients, users, digest]
-- Every answer starts with the users whose last entry the sweep took out (departed).
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local ttl = tonumber(ARGV[2])
local channel, publish, pubsub = ARGV[3], ARGV[4], ARGV[5]
local TOMBSTONE_MS = 86400000 -- a cut longer than a day re-adds its clients quietly

-- FNV-1a, 32 bits, its multiplication split below 2^53 (as in
-- lib/protocol/presence-hash.js).
local function hash(s)
  local h = 2166136261
  for i = 1, #s do
    h = bit.bxor(h, string.byte(s, i)) % 4294967296
    h = ((h % 256) * 16777216 + h * 403) % 4294967296
  end
  return h
end

local function toggle(client)
  local digest = tonumber(redis.call('GET', KEYS[4]) or '0')
  redis.call('SET', KEYS[4], bit.bxor(digest, hash(client)) % 4294967296)
end

local function announce(kind, client, member)
  if publish ~= '' then
    redis.call(publish, pubsub, '{"type":"' .. kind .. '","channel":"' .. channel .. '","client":"' .. client .. '"' .. member .. '}')
  end
end

-- Takes one entry out; returns 0 (absent), 1, or 2 with its user (the user's last).
local function take(client, kind)
  local value = redis.call('HGET', KEYS[1], client)
  redis.call('ZREM', KEYS[2], client)
  if not value then return 0 end
  redis.call('HDEL', KEYS[1], client)
  toggle(client)
  local newline = string.find(value, '\n', 1, true)
  local user = string.sub(value, newline + 1)
  announce(kind, client, string.sub(value, 1, newline - 1))
  if user == '' then return 1 end
  if redis.call('HINCRBY', KEYS[3], user, -1) <= 0 then
    redis.call('HDEL', KEYS[3], user)
    return 2, user
  end
  return 1
end

local op = ARGV[1]
if op == 'refresh' then
  for i = 6, #ARGV, 3 do redis.call('ZADD', KEYS[2], 'XX', now + ttl, ARGV[i]) end
end

local departed = {}
for _, client in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)) do
  local result, user = take(client, 'leave')
  if result > 0 then
    redis.call('ZADD', KEYS[5], now, client)
    redis.call('PEXPIRE', KEYS[5], TOMBSTONE_MS)
  end
  if result == 2 then departed[#departed + 1] = user end
end
redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', now - TOMBSTONE_MS)

local first = 6
if op == 'admit' then
  local client, user = ARGV[7], ARGV[8]
  if redis.call('HEXISTS', KEYS[1], client) == 0 and redis.call('HEXISTS', KEYS[3], user) == 0
      and redis.call('HLEN', KEYS[3]) >= tonumber(ARGV[6]) then
    return { departed, { -1 } }
  end
  op, first = 'add', 7
end
if op == 'add' or op == 'refresh' then
  local answers = {}
  for i = first, #ARGV, 3 do
    local client, user, member = ARGV[i], ARGV[i + 1], ARGV[i + 2]
    redis.call('ZADD', KEYS[2], now + ttl, client)
    if redis.call('HSET', KEYS[1], client, member .. '\n' .. user) == 0 then
      answers[#answers + 1] = 0
    else
      toggle(client)
      local usersFirst = user ~= '' and redis.call('HINCRBY', KEYS[3], user, 1) == 1
      local announced = redis.call('ZREM', KEYS[5], client) == 1
      if op == 'add' or announced then announce('join', client, member) end
      if op == 'refresh' and not announced then
        answers[#answers + 1] = 0
      else
        answers[#answers + 1] = usersFirst and 2 or 1
      end
    end
  end
  -- A channel every node has left (or whose nodes crashed) leaves no keys behind.
  for i = 1, 4 do redis.call('PEXPIRE', KEYS[i], ttl * 2) end
  return { departed, answers }
elseif op == 'remove' then
  local answers = {}
  for i = 6, #ARGV do
    answers[#answers + 1] = (take(ARGV[i], 'leave'))
    redis.call('ZREM', KEYS[5], ARGV[i])
  end
  return { departed, answers }
elseif op == 'read' then
  local count = redis.call('HLEN', KEYS[1])
  if count > tonumber(ARGV[6]) then return { departed, count } end
  return { departed, redis.call('HGETALL', KEYS[1]) }
end
return { departed, redis.call('HLEN', KEYS[1]), redis.call('HLEN', KEYS[3]), tonumber(redis.call('GET', KEYS[4]) or '0') }
