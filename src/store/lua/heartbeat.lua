-- Renews a replica's lease, and when the replica was unknown (its lease expired, or Redis was
-- flushed or restarted empty) writes back every count it holds, so the fleet's counts are exact
-- again without an operator. Also the polling fallback for lost release messages: it answers
-- what the other replicas hold on each budget.
-- KEYS[1]        the replicas zset
-- KEYS[2..n+1]   budget hashes this replica knows
-- ARGV[1]        replica id
-- ARGV[2]        lease ttl (ms)
-- ARGV[3..n+2]   this replica's count on each budget
-- ARGV[n+3]      optional: '1' writes the counts back even when the replica is known — after an
--                outage its lease outlived, where releases and grants made meanwhile (or lost on
--                the wire, or resent and run twice) left its fields wrong
-- Returns { 1 if it had to re-register else 0, Redis time in ms, then for each budget the calls
--           the other live replicas hold }.
local replicas_key = KEYS[1]
local replica = ARGV[1]
local now = now_ms()
local known = alive(replicas_key, replica, now)
local rewrite = not known or ARGV[#KEYS + 2] == '1'
redis.call('ZADD', replicas_key, now + tonumber(ARGV[2]), replica)
alive_cache[replica] = true
local reply = { known and 0 or 1, now }
for i = 2, #KEYS do
  if rewrite then
    local count = tonumber(ARGV[i + 1])
    if count > 0 then
      redis.call('HSET', KEYS[i], replica, count)
    else
      redis.call('HDEL', KEYS[i], replica)
    end
  end
  local total, mine = inflight(replicas_key, KEYS[i], now, replica)
  reply[i + 1] = total - mine
end
return reply
