-- Reads the pods' latest shared states, for a replica that starts using them.
-- KEYS[1..n]  pod state hashes {state, t}
-- Returns { for each pod its state (JSON, or false when none is kept) and how many ms ago it was
--           written (Redis time) }.
local now = now_ms()
local reply = {}
for i = 1, #KEYS do
  local h = redis.call('HMGET', KEYS[i], 'state', 't')
  reply[2 * i - 1] = h[1]
  if h[2] then reply[2 * i] = math.max(0, now - tonumber(h[2])) else reply[2 * i] = 0 end
end
return reply
