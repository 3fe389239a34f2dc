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
-- ARGV[5..n+4]   this replica's counts on each hash, then its flows there (parse_waiters), ''
--                when none waits there (the field goes)
-- Publishes "replica\n<key> <waiters left>[ *]…" of the hashes whose total went down, or that a
-- flow left (marked `*`): a replica that left room for those waiters, or held back at its fair
-- share while they waited, looks again — after a flow left, its share may have grown even while
-- other waiters remain, so it drops that floor too. Dead replicas' fields are ignored (and
-- dropped) by the grant script; their index entries expire here.
-- Returns { how many hashes were published, ms until the soonest lease of another live replica ends
--           (-1 when there is none): a waiting replica looks at the fleet again then, so the
--           slots of a replica that died are taken up as its lease ends, not a heartbeat later;
--           then per hash written, this replica's flows that wait on other live replicas too
--           (issue 24, flow-advert.ts): lines "<class> <replicas> <token>", class 0 =
--           interactive, replicas counting where the flow waits in that class or a better one;
--           '' for none }. The replica's fair queue serves such a flow at 1/replicas of its
--           weight, as the grant scripts count it in its part of the lane (lane_part).
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
local function total(value)
  local sum = 0
  if value then
    -- The counts are the first line; the flows' lines follow (parse_waiters).
    for n in string.gmatch(string.match(value, '^[^\n]*'), '%d+') do sum = sum + tonumber(n) end
  end
  return sum
end
-- Whether a flow named in `old` (a field's value) is not in `new`: this replica's part of the
-- lane shrank, so the others' parts grew (lane_part) — they drop the floor they hold back to.
local function flows_left(old, new)
  if not old then return false end
  local now = {}
  for token in string.gmatch(new, '\n%d %S+ (%S+)') do now[token] = true end
  for token in string.gmatch(old, '\n%d %S+ (%S+)') do
    if not now[token] then return true end
  end
  return false
end
-- This replica's flows on a lane that wait on other live replicas too, and on how many.
local function spreads(key)
  local entries, mine = lane_entries(KEYS[2], key, replica, now)
  if #entries == 0 then return '' end
  local lines = {}
  for class = 1, 3 do
    local spread, _, my_tokens = flow_spreads(entries, mine, class)
    for _, token in ipairs(my_tokens) do
      if spread[token] > 1 then lines[#lines + 1] = (class - 1) .. ' ' .. spread[token] .. ' ' .. token end
    end
  end
  return table.concat(lines, '\n')
end
local fewer = {}
local shared = {}
for i = 3, #KEYS do
  local old = redis.call('HGET', KEYS[i], replica)
  local new = ARGV[i + 2]
  if new == '' then
    redis.call('HDEL', KEYS[i], replica)
  else
    redis.call('HSET', KEYS[i], replica, new)
    redis.call('PEXPIRE', KEYS[i], ttl)
  end
  if flows_left(old, new) then
    fewer[#fewer + 1] = KEYS[i] .. ' ' .. total(new) .. ' *'
  elseif total(new) < total(old) then
    fewer[#fewer + 1] = KEYS[i] .. ' ' .. total(new)
  end
  if new == '' then shared[i - 2] = '' else shared[i - 2] = spreads(KEYS[i]) end
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
return { #fewer, soonest, shared }
