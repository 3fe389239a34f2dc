-- Settles calls' reservations on the fleet's buckets (reconcile): adds each delta to its bucket's
-- level now. A refund (positive) never lifts a bucket above its capacity; a charge (negative) may
-- take it below zero, and that debt is carried until the refill pays it.
-- KEYS[1..n]   bucket hashes {level, t}
-- ARGV         for each bucket: its capacity, then the delta
-- Returns each bucket's level after it (strings).
local now = now_ms()
local reply = {}
for i = 1, #KEYS do
  local cap = tonumber(ARGV[2 * i - 1])
  local delta = tonumber(ARGV[2 * i])
  local level = bucket_level(KEYS[i], cap, now) + delta
  if delta > 0 and level > cap then level = cap end
  bucket_store(KEYS[i], level, cap, now)
  reply[i] = tostring(level)
end
return reply
