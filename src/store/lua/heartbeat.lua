-- Renews a replica's lease, and when the replica was unknown (its lease expired, or Redis was
-- flushed or restarted empty) writes back every count it holds, so the fleet's counts are exact
-- again without an operator.
-- KEYS[1]        the replicas zset
-- KEYS[2..n+1]   budget hashes this replica holds calls on
-- ARGV[1]        replica id
-- ARGV[2]        lease ttl (ms)
-- ARGV[3..n+2]   this replica's count on each budget
-- Returns { 1 if it had to re-register else 0, Redis time in ms }.
local replicas_key = KEYS[1]
local replica = ARGV[1]
local now = now_ms()
local known = alive(replicas_key, replica, now)
redis.call('ZADD', replicas_key, now + tonumber(ARGV[2]), replica)
if not known then
  for i = 2, #KEYS do
    local count = tonumber(ARGV[i + 1])
    if count > 0 then
      redis.call('HSET', KEYS[i], replica, count)
    else
      redis.call('HDEL', KEYS[i], replica)
    end
  end
end
return { known and 0 or 1, now }
