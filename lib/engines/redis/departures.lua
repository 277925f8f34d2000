-- A member's departure standing at the end of its grace (webhooks:
-- member_removed). KEYS[1] gw:{<channel>}:gone:<user> holds the token of the
-- last departure; a return (on any node) deletes it. Invariant: the marker is
-- removed, and 1 returned, only if it still holds ARGV[1], this departure's
-- token: so at most one node announces the departure, and none if the user
-- came back.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
