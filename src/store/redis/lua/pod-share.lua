-- Shares a pod's adaptive state (width, breaker, quota pause): keeps the latest in
-- {P}:pod:<id> with the Redis time it was written, so a replica started later adopts it with the
-- right ages, and publishes it to the replicas running now.
-- KEYS[1]  the pod's state hash {state, t}
-- ARGV[1]  the state (JSON; times in it are ages and time left as of the write)
-- ARGV[2]  channel ('' for none)
-- ARGV[3]  the message to publish
-- ARGV[4]  ms the state is kept without a new write
local now = now_ms()
redis.call('HSET', KEYS[1], 'state', ARGV[1], 't', now)
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[4]))
if ARGV[2] ~= '' then redis.call('PUBLISH', ARGV[2], ARGV[3]) end
return now
