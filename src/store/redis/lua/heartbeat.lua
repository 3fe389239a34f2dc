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
-- ARGV[n+4]      optional: '1' when this replica's fields are exact after this script (written
--                back now, or nothing failed since they last were): marked with Redis's time in
--                {P}:synced (replica -> ms), so a replica settling after an outage or a flush
--                knows when every other replica's counts are in Redis again ('0': not exact).
--                Given ('0' or '1'), the answer has two more elements (below).
-- Returns { 1 if it had to re-register else 0, Redis time in ms, then for each budget the calls
--           the other live replicas hold }, and with ARGV[n+4] given: { the other live replicas
--           and when each was last marked exact (flat: id, ms, id, ms…; 0 = never), then for each
--           budget the other live replicas' counts one by one (an array per budget) }: what each
--           replica held when last heard, which an outage's local shares are worked out from.
local replicas_key = KEYS[1]
local replica = ARGV[1]
local ttl = tonumber(ARGV[2])
local now = now_ms()
local known = alive(replicas_key, replica, now)
local rewrite = not known or ARGV[#KEYS + 2] == '1'
local exact = ARGV[#KEYS + 3]
redis.call('ZADD', replicas_key, now + ttl, replica)
alive_cache[replica] = true
local reply = { known and 0 or 1, now }
local each = {}
for i = 2, #KEYS do
  if rewrite then
    local count = tonumber(ARGV[i + 1])
    if count > 0 then
      redis.call('HSET', KEYS[i], replica, count)
    else
      redis.call('HDEL', KEYS[i], replica)
    end
  end
  -- `inflight` (the prelude's), with each other replica's count kept apart.
  local fields = redis.call('HGETALL', KEYS[i])
  local others, counts = 0, {}
  for j = 1, #fields, 2 do
    local other = fields[j]
    if alive(replicas_key, other, now) then
      if other ~= replica then
        local n = tonumber(fields[j + 1])
        others = others + n
        counts[#counts + 1] = n
      end
    else
      redis.call('HDEL', KEYS[i], other)
    end
  end
  reply[i + 1] = others
  each[i - 1] = counts
end
if exact == nil then return reply end
-- {P}:synced lives under the same hash tag as {P}:replicas (one Cluster slot).
local synced_key = string.sub(replicas_key, 1, -9) .. 'synced'
if exact == '1' or rewrite then redis.call('HSET', synced_key, replica, now) end
local marks = redis.call('HGETALL', synced_key)
local marked = {}
for j = 1, #marks, 2 do
  if alive(replicas_key, marks[j], now) then
    marked[marks[j]] = marks[j + 1]
  else
    redis.call('HDEL', synced_key, marks[j])
  end
end
redis.call('PEXPIRE', synced_key, ttl)
local live = {}
for _, other in ipairs(redis.call('ZRANGEBYSCORE', replicas_key, '(' .. now, '+inf')) do
  if other ~= replica then
    live[#live + 1] = other
    live[#live + 1] = tonumber(marked[other] or 0)
  end
end
reply[#KEYS + 2] = live
reply[#KEYS + 3] = each
return reply
