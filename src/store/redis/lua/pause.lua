-- Pauses an account fleet-wide (a provider's quota answer): the key lives `ms` in Redis time, and
-- grant-path.lua refuses every grant on the account while it does. A shorter pause never cuts a
-- longer one short.
-- KEYS[1]   the account's pause key
-- ARGV[1]   the pause (ms, already capped by max_quota_pause_s)
-- Returns the ms left on the pause after it.
local ms = tonumber(ARGV[1])
local left = redis.call('PTTL', KEYS[1])
if left < ms then
  redis.call('SET', KEYS[1], '1', 'PX', ms)
  return ms
end
return left
