-- Advertises how many waiters this replica has on lane budgets, per effective class, so the
-- other replicas' grants leave room for better ones (priority across replicas, DESIGN §5), and
-- whether it waits at all (the waiting index release.lua reads: releases publish only then).
-- KEYS[1]        the waiting index ({P}:waiting zset: replica id -> expiry, Redis ms)
-- KEYS[2]        the replicas zset (leases), read for the answer below
-- KEYS[3..n+2]   waiter hashes {P}:w:<budget>: replica id -> "interactive default bulk"
-- ARGV[1]        replica id
-- ARGV[2]        channel to publish on when waiters left ('' for none)
-- ARGV[3]        ms the hashes and the index entry live without a write (the lease TTL: the
--                heartbeat re-writes them)
-- ARGV[4]        '1' when this replica has a waiter on some lane, else '0'
-- ARGV[5..n+4]   this replica's counts on each hash, '' when none waits there (the field goes)
-- Publishes "replica\n<key> <waiters left>…" of the hashes whose total went down: a replica that
-- left room for those waiters, or held back at its fair share while they waited, looks again. Dead replicas' fields are ignored (and dropped) by the grant script;
-- their index entries expire here.
-- Returns { how many hashes went down, ms until the soonest lease of another live replica ends
--           (-1 when there is none) }: a waiting replica looks at the fleet again then, so the
--           slots of a replica that died are taken up as its lease ends, not a heartbeat later.
local index = KEYS[1]
local replica = ARGV[1]
local ttl = tonumber(ARGV[3])
local now = now_ms()
redis.call('ZREMRANGEBYSCORE', index, '-inf', now)
if ARGV[4] == '1' then
  redis.call('ZADD', index, now + ttl, replica)
  redis.call('PEXPIRE', index, ttl)
else
  redis.call('ZREM', index, replica)
end
local function total(counts)
  local sum = 0
  if counts then
    for n in string.gmatch(counts, '%d+') do sum = sum + tonumber(n) end
  end
  return sum
end
local fewer = {}
for i = 3, #KEYS do
  local old = redis.call('HGET', KEYS[i], replica)
  local new = ARGV[i + 2]
  if new == '' then
    redis.call('HDEL', KEYS[i], replica)
  else
    redis.call('HSET', KEYS[i], replica, new)
    redis.call('PEXPIRE', KEYS[i], ttl)
  end
  if total(new) < total(old) then fewer[#fewer + 1] = KEYS[i] .. ' ' .. total(new) end
end
if ARGV[2] ~= '' and #fewer > 0 then
  redis.call('PUBLISH', ARGV[2], replica .. '\n' .. table.concat(fewer, '\n'))
end
-- The two soonest leases after now: one of them is another replica's, if any is.
local soonest = -1
local leases = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 2)
for i = 1, #leases, 2 do
  if leases[i] ~= replica then
    soonest = tonumber(leases[i + 1]) - now
    break
  end
end
return { #fewer, soonest }
