-- The grant of a path with metered budgets: the concurrency budgets as grant.lua takes them, and
-- each token or request bucket and each account's quota pause on the path, in one script (one
-- round trip, all or nothing).
-- KEYS[1]                    the replicas zset
-- KEYS[2..c+1]               the path's concurrency hashes
-- KEYS[c+2..c+b+1]           the path's bucket hashes {level, t}
-- KEYS[c+b+2..]              the path's quota pause keys (string with PX while paused)
-- ARGV[1]                    replica id
-- ARGV[2], ARGV[3]           c, b
-- ARGV[4..c+3]               each concurrency budget's limit for this call
-- ARGV[c+4..c+3b+3]          each bucket's capacity, the amount this call takes from it, and the
--                            level it must leave there: the bucket's interactive reserve, 0 for a
--                            call whose own class is interactive (DESIGN §1.1)
-- Optionally (priority across replicas): KEYS[#KEYS] the waiters hash of the first concurrency
-- budget (the lane's, `{P}:w:<budget>`) and ARGV[c+3b+4] this call's effective class (0 =
-- interactive). Then the first budget also refuses when its calls in flight plus the waiters
-- other live replicas advertise there with a strictly better class reach its limit: room is
-- left for them; and when this replica holds its fair share there while other replicas wait
-- with calls of this class or better (fair_share): the rest is theirs.
-- Returns { 1 when granted, or -i when the i-th budget (concurrency, then buckets, then pauses,
--           1-based) had no room; then for each concurrency budget the calls the other live
--           replicas hold on it; each bucket's level after this call (a string); each pause's
--           ms left (0 when none); with the waiters hash, last, those better waiters and the
--           lane's limit less this replica's fair share (0 while no other replica waits there
--           with this class or better): the room its own passes leave until Redis says otherwise }.
-- Error SLUICE_UNKNOWN_REPLICA as grant.lua.
local replicas_key = KEYS[1]
local replica = ARGV[1]
local c = tonumber(ARGV[2])
local b = tonumber(ARGV[3])
local ranked = #ARGV == c + 3 * b + 4
local rank = ranked and tonumber(ARGV[#ARGV]) or 0
local last_pause = #KEYS
if ranked then last_pause = #KEYS - 1 end
local now = now_ms()
if not alive(replicas_key, replica, now) then return unknown_replica() end
local reply = { 1 }
local full = 0
local better = 0
local share = tonumber(ARGV[4])
if ranked and c > 0 then
  local counts, rivals, parts = waiting_by_class(replicas_key, KEYS[#KEYS], replica, now)
  better = better_than(counts, rank)
  share = fair_share(tonumber(ARGV[4]), rivals, rank, parts)
end
for i = 1, c do
  local key = KEYS[i + 1]
  local total, mine = inflight(replicas_key, key, now, replica)
  reply[i + 1] = total - mine
  if full == 0 and total >= tonumber(ARGV[i + 3]) then full = i end
  if full == 0 and i == 1 and total + better >= tonumber(ARGV[4]) then full = 1 end
  if full == 0 and i == 1 and mine >= share then full = 1 end
end
local levels = {}
for j = 1, b do
  local cap = tonumber(ARGV[c + 3 * j + 1])
  local amount = tonumber(ARGV[c + 3 * j + 2])
  local floor = tonumber(ARGV[c + 3 * j + 3])
  levels[j] = bucket_level(KEYS[c + j + 1], cap, now)
  if full == 0 and levels[j] - amount < floor then full = c + j end
end
local pauses = {}
for p = 1, last_pause - c - b - 1 do
  local left = redis.call('PTTL', KEYS[c + b + p + 1])
  if left < 0 then left = 0 end
  pauses[p] = left
  if full == 0 and left > 0 then full = c + b + p end
end
if full == 0 then
  for i = 1, c do
    redis.call('HINCRBY', KEYS[i + 1], replica, 1)
  end
  for j = 1, b do
    local cap = tonumber(ARGV[c + 3 * j + 1])
    local amount = tonumber(ARGV[c + 3 * j + 2])
    levels[j] = levels[j] - amount
    bucket_store(KEYS[c + j + 1], levels[j], cap, now)
    bucket_draw(KEYS[c + j + 1], amount, now)
  end
else
  reply[1] = -full
end
for j = 1, b do reply[c + j + 1] = tostring(levels[j]) end
for p = 1, #pauses do reply[c + b + p + 1] = pauses[p] end
if ranked then
  reply[c + b + #pauses + 2] = better
  reply[c + b + #pauses + 3] = math.max(0, tonumber(ARGV[4]) - share)
end
return reply
