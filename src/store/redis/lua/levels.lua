-- Reads the fleet's buckets and quota pauses without changing them: the heartbeat's resync of
-- each replica's local mirror (refunds and takes of the other replicas, a pause set elsewhere).
-- KEYS[1..b]     bucket hashes {level, t}
-- KEYS[b+1..]    quota pause keys
-- ARGV[1..b]     each bucket's capacity
-- Returns each bucket's level (strings), then each pause's ms left (0 when none).
local now = now_ms()
local reply = {}
local b = #ARGV
for i = 1, b do
  reply[i] = tostring(bucket_level(KEYS[i], tonumber(ARGV[i]), now))
end
for p = b + 1, #KEYS do
  local left = redis.call('PTTL', KEYS[p])
  if left < 0 then left = 0 end
  reply[p] = left
end
return reply
