-- Gives back slots on budgets for a replica, never below zero: one call carries every release of
-- an event-loop turn (`redis/releases.ts`). Tells the other replicas which budgets gained room
-- only when one of them waits (the waiting index, written by advertise.lua): an uncontended
-- release wakes nobody, and a replica's own waiters are woken in its process, not through Redis.
-- KEYS[1]       the waiting index ({P}:waiting zset: replica id -> advertisement expiry, Redis ms)
-- KEYS[2..n+1]  budget hashes
-- ARGV[1]       replica id
-- ARGV[2]       channel to publish on ('' for none)
-- ARGV[3..n+2]  slots given back on each budget
-- Publishes "replica\n<count> <budget key>\n…"; returns 1 when it published, else 0.
local replica = ARGV[1]
local freed = {}
for i = 2, #KEYS do
  local n = tonumber(ARGV[i + 1])
  local left = redis.call('HINCRBY', KEYS[i], replica, -n)
  if left <= 0 then
    redis.call('HDEL', KEYS[i], replica)
  end
  freed[i - 1] = n .. ' ' .. KEYS[i]
end
if ARGV[2] == '' then return 0 end
-- An entry of a replica that died waiting only costs a message until advertise.lua drops it.
local waiting = redis.call('ZCARD', KEYS[1])
if waiting == 0 or (waiting == 1 and redis.call('ZSCORE', KEYS[1], replica)) then return 0 end
redis.call('PUBLISH', ARGV[2], replica .. '\n' .. table.concat(freed, '\n'))
return 1
