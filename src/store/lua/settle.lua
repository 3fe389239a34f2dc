-- Settles calls' reservations on the fleet's buckets (reconcile): adds each delta to its bucket's
-- level now. A refund (positive) never lifts a bucket above its capacity; a charge (negative) may
-- take it below zero, and that debt is carried until the refill pays it.
--
-- Once only: a settlement carries an id (the sending process's run and a count), and an id already
-- applied is not applied again. A settlement whose answer was lost (a dropped connection, a
-- timeout) may have run: ioredis re-sends what was in flight when it reconnects, and the store
-- re-sends what failed once Redis answers; any copy after the first only reads the levels. The
-- replica's last 1,024 ids are kept, oldest dropped first (scored by when they were applied: a
-- restarted process under the same replica name starts a new run, never colliding).
-- KEYS[1]      this replica's applied settlement ids (a sorted set)
-- KEYS[2..n]   bucket hashes {level, t}
-- ARGV[1]      the settlement's id; ARGV[2] how long the ids are kept (ms)
-- ARGV         then for each bucket: its capacity, then the delta
-- Returns each bucket's level after it (strings).
local now = now_ms()
local fresh = redis.call('ZADD', KEYS[1], 'NX', now, ARGV[1]) == 1
if fresh then
  redis.call('ZREMRANGEBYRANK', KEYS[1], 0, -1025)
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
local reply = {}
for i = 2, #KEYS do
  local cap = tonumber(ARGV[2 * i - 1])
  local delta = fresh and tonumber(ARGV[2 * i]) or 0
  local level = bucket_level(KEYS[i], cap, now) + delta
  if delta > 0 and level > cap then level = cap end
  if fresh then bucket_store(KEYS[i], level, cap, now) end
  reply[i - 1] = tostring(level)
end
return reply
