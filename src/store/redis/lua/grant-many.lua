-- Several grants of one replica in one script: the grants it asks for in one event-loop turn
-- (`FleetGrants`), each as grant.lua takes it, or, with a waiters key, as grant-path.lua takes a
-- path without buckets or pauses (priority across replicas). They are taken in order, so a later
-- grant sees what an earlier one took; the time, the lease check and each hash are read once.
-- KEYS[1]      the replicas zset
-- KEYS[2..]    every budget hash and waiters hash the grants name, each once
-- ARGV[1]      replica id
-- ARGV[2]      g, the number of grants
-- then for each grant: n, its budgets; n pairs (the budget's index in KEYS, its limit for this
-- call: a lane's lowered by its reserve for a non-interactive call); the index in KEYS of the
-- lane's waiters hash (0 for none) and the call's effective class (0 = interactive).
-- Returns one answer per grant, as grant-path.lua answers one: { 1 when granted, or -i when
-- budget i had no room; then for each budget the calls the other live replicas hold on it; with
-- a waiters hash, last, the better waiters of the other replicas and the lane's limit less this
-- replica's fair share (fair_share) }.
-- Error SLUICE_UNKNOWN_REPLICA as grant.lua (for every grant of the call).
local replicas_key = KEYS[1]
local replica = ARGV[1]
local now = now_ms()
if not alive(replicas_key, replica, now) then return unknown_replica() end
local total, mine, taken, classes, rivals, parts = {}, {}, {}, {}, {}, {}
local answers = {}
local a = 3
for g = 1, tonumber(ARGV[2]) do
  local n = tonumber(ARGV[a])
  local w = tonumber(ARGV[a + 2 * n + 1])
  local rank = tonumber(ARGV[a + 2 * n + 2])
  local better = 0
  local share = tonumber(ARGV[a + 2])
  if w > 0 then
    if classes[w] == nil then classes[w], rivals[w], parts[w] = waiting_by_class(replicas_key, KEYS[w], replica, now) end
    better = better_than(classes[w], rank)
    share = fair_share(tonumber(ARGV[a + 2]), rivals[w], rank, parts[w])
  end
  local reply = { 1 }
  local full = 0
  for i = 1, n do
    local k = tonumber(ARGV[a + 2 * i - 1])
    local limit = tonumber(ARGV[a + 2 * i])
    if total[k] == nil then
      total[k], mine[k] = inflight(replicas_key, KEYS[k], now, replica)
      taken[k] = 0
    end
    reply[i + 1] = total[k] - mine[k]
    if full == 0 and total[k] >= limit then full = i end
    -- The lane (first budget) leaves room for better waiters of other replicas, and holds no
    -- more than this replica's fair share while others wait (grant-path.lua).
    if full == 0 and i == 1 and w > 0 and total[k] + better >= limit then full = 1 end
    if full == 0 and i == 1 and w > 0 and mine[k] >= share then full = 1 end
  end
  if full > 0 then
    reply[1] = -full
  else
    for i = 1, n do
      local k = tonumber(ARGV[a + 2 * i - 1])
      total[k] = total[k] + 1
      mine[k] = mine[k] + 1
      taken[k] = taken[k] + 1
    end
  end
  if w > 0 then
    reply[n + 2] = better
    reply[n + 3] = tonumber(ARGV[a + 2]) - share
  end
  answers[g] = reply
  a = a + 2 * n + 3
end
for k, count in pairs(taken) do
  if count > 0 then redis.call('HINCRBY', KEYS[k], replica, count) end
end
return answers
