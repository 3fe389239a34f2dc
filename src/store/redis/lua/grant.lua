-- Takes one slot on every budget of a path for a replica, all or nothing: one round trip per grant.
-- KEYS[1]       the replicas zset
-- KEYS[2..n+1]  the path's budget hashes
-- ARGV[1]       replica id
-- ARGV[2..n+1]  each budget's limit for this call (the lane's already lowered by its reserve
--               for a non-interactive call)
-- Returns { 1 when granted, or -i when budget i (1-based, along the path) had no room,
--           then for each budget the calls the other live replicas hold on it }, so the caller's
-- mirror of the fleet is fresh after every grant.
-- Error SLUICE_UNKNOWN_REPLICA when the replica's lease is gone (expired, or Redis was flushed):
-- the store re-registers its calls and retries once.
local replicas_key = KEYS[1]
local replica = ARGV[1]
local now = now_ms()
if not alive(replicas_key, replica, now) then return unknown_replica() end
local reply = { 1 }
local full = 0
for i = 2, #KEYS do
  local total, mine = inflight(replicas_key, KEYS[i], now, replica)
  reply[i] = total - mine
  if full == 0 and total >= tonumber(ARGV[i]) then
    full = i - 1
  end
end
if full > 0 then
  reply[1] = -full
  return reply
end
for i = 2, #KEYS do
  redis.call('HINCRBY', KEYS[i], replica, 1)
end
return reply
