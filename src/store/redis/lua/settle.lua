-- Settles calls' reservations on the fleet's buckets (reconcile, the same rule as
-- RateBudget.reconcile): a refund (positive) never lifts a bucket above its capacity; a charge
-- (negative) may take it below zero, and that debt is carried until the refill pays it.
--
-- Once only: a settlement carries an id (the sending process's run and a count), and an id already
-- applied is not applied again. A settlement whose answer was lost (a dropped connection, a
-- timeout) may have run: ioredis re-sends what was in flight when it reconnects, and the store
-- re-sends what failed once Redis answers; any copy after the first only reads the levels. The
-- replica's last 1,024 ids are kept, oldest dropped first (scored by when they were applied: a
-- restarted process under the same replica name starts a new run, never colliding).
-- KEYS[1]      this replica's applied settlement ids (a sorted set)
-- KEYS[2..n]   bucket hashes {level, t, d, x<slot>}
-- ARGV[1]      the settlement's id; ARGV[2] how long the ids are kept (ms)
-- ARGV         then for each bucket: its capacity, the delta (a charge, or the refund the refill
--              bound allows), what of the reservation went unused (refunded as far as the drawn
--              bound allows: settled_level), the ms since the grant on the sender's clock and
--              what the call used of it; the last three may be left out (then only the delta
--              applies)
-- A refund never lifts a bucket above its capacity; a charge is counted as drawn.
-- Returns each bucket's level after it (strings).
local now = now_ms()
local fresh = redis.call('ZADD', KEYS[1], 'NX', now, ARGV[1]) == 1
if fresh then
  redis.call('ZREMRANGEBYRANK', KEYS[1], 0, -1025)
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
local stride = (#ARGV - 2) / (#KEYS - 1)
local reply = {}
for i = 2, #KEYS do
  local a = 2 + stride * (i - 2)
  local cap = tonumber(ARGV[a + 1])
  local level = bucket_level(KEYS[i], cap, now)
  if fresh then
    local delta = tonumber(ARGV[a + 2])
    local unused, ceiling = 0, nil
    if stride == 5 then
      unused = tonumber(ARGV[a + 3])
      if delta >= 0 and unused > delta then
        ceiling = drawn_ceiling(KEYS[i], now - tonumber(ARGV[a + 4]), now, cap, tonumber(ARGV[a + 5]))
      end
    end
    local settled = settled_level(level, delta, unused, ceiling, cap)
    if settled ~= level or delta < 0 then
      bucket_store(KEYS[i], settled, cap, now)
      bucket_draw(KEYS[i], -delta, now)
    end
    level = settled
  end
  reply[i - 1] = tostring(level)
end
return reply
