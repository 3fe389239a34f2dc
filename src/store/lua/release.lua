-- Gives back one slot on every budget of a path for a replica, never below zero, and tells the
-- other replicas which budgets gained room.
-- KEYS[1..n]  the path's budget hashes
-- ARGV[1]     replica id
-- ARGV[2]     channel to publish on ('' for none)
local replica = ARGV[1]
for i = 1, #KEYS do
  local left = redis.call('HINCRBY', KEYS[i], replica, -1)
  if left <= 0 then
    redis.call('HDEL', KEYS[i], replica)
  end
end
if ARGV[2] ~= '' then
  redis.call('PUBLISH', ARGV[2], replica .. '\n' .. table.concat(KEYS, '\n'))
end
return 1
