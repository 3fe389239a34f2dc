-- Takes slots on per-key bounds for one replica's arrivals of an event-loop turn (`FleetKeys`).
-- A key's bound counts its calls in flight plus queued, so a slot is taken when a call arrives
-- (granted at once or queued) and given back when it ends or leaves its queue (release.lua).
--   {P}:b:key:<name>  hash  replica id -> that replica's calls on the key, in flight + queued
-- Each key's arrivals are taken in order, as many as its bound leaves room for.
-- KEYS[1]       the replicas zset
-- KEYS[2..n+1]  the keys' hashes
-- ARGV[1]       replica id
-- ARGV[2i], ARGV[2i+1] for the key at KEYS[i+1]: arrivals asked, the key's bound
-- Returns for each key { slots taken (for its first that many arrivals), calls the other live
-- replicas hold on it }.
-- Error SLUICE_UNKNOWN_REPLICA as grant.lua: the store re-registers its calls and asks once more.
local replicas_key = KEYS[1]
local replica = ARGV[1]
local now = now_ms()
if not alive(replicas_key, replica, now) then return unknown_replica() end
local reply = {}
for i = 2, #KEYS do
  local asked = tonumber(ARGV[2 * i - 2])
  local bound = tonumber(ARGV[2 * i - 1])
  local total, mine = inflight(replicas_key, KEYS[i], now, replica)
  local taken = math.max(0, math.min(asked, bound - total))
  if taken > 0 then redis.call('HINCRBY', KEYS[i], replica, taken) end
  reply[i - 1] = { taken, total - mine }
end
return reply
