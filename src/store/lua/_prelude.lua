-- Shared by every sluice script (prepended by scripts/assemble-lua.mjs).
--
-- Layout, all under one hash tag so a Redis Cluster keeps a path's keys in one slot:
--   {P}:replicas       zset  replica id -> lease expiry (ms, Redis time)
--   {P}:b:<budget>     hash  replica id -> calls that replica holds on the budget
-- A replica's counts only count while its lease is alive: a replica killed with SIGKILL stops
-- heartbeating, its lease expires, and every budget forgets its calls at the next script that
-- reads that budget. Time is Redis's own (TIME), never a replica's clock.

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Replica liveness, read at most once per replica per script.
local alive_cache = {}
local function alive(replicas_key, replica, now)
  local cached = alive_cache[replica]
  if cached ~= nil then return cached end
  local expiry = redis.call('ZSCORE', replicas_key, replica)
  local ok = expiry ~= false and tonumber(expiry) > now
  alive_cache[replica] = ok
  return ok
end

-- The error a script answers when its replica holds no live lease (expired, or Redis was flushed):
-- the store re-registers its calls and asks again.
local function unknown_replica()
  return redis.error_reply('SLUICE_UNKNOWN_REPLICA no live lease for this replica')
end

-- Calls held on a budget by live replicas, and of those `me`'s own (one read of the hash: its
-- own field is in the same HGETALL); the fields of dead replicas are dropped on the way.
local function inflight(replicas_key, budget_key, now, me)
  local fields = redis.call('HGETALL', budget_key)
  local sum = 0
  local mine = 0
  for i = 1, #fields, 2 do
    local replica = fields[i]
    if alive(replicas_key, replica, now) then
      local n = tonumber(fields[i + 1])
      sum = sum + n
      if replica == me then mine = n end
    else
      redis.call('HDEL', budget_key, replica)
    end
  end
  return sum, mine
end

-- Token and request buckets: {P}:r:<budget> hash {level, t}, t in Redis ms. A bucket refills
-- continuously at capacity per minute, never above capacity; a missing hash is a full bucket.
local MINUTE_MS = 60000
local function bucket_level(key, cap, now)
  local h = redis.call('HMGET', key, 'level', 't')
  if not h[1] then return cap end
  local level = tonumber(h[1]) + math.max(0, now - tonumber(h[2])) * cap / MINUTE_MS
  if level > cap then return cap end
  return level
end

-- Writes a bucket's level; the hash expires once the refill would have filled it again (a missing
-- hash reads as full), so idle buckets leave nothing behind.
local function bucket_store(key, level, cap, now)
  redis.call('HSET', key, 'level', tostring(level), 't', now)
  local full_in = math.ceil((cap - level) * MINUTE_MS / cap) + 1000
  redis.call('PEXPIRE', key, full_in)
end

-- Waiters the other live replicas advertise on a lane budget ({P}:w:<budget> hash: replica id ->
-- "interactive default bulk" counts, effective classes), summed per class: { interactive,
-- default, bulk }. Fields of dead replicas are dropped on the way, like their counts.
local function waiting_by_class(replicas_key, key, replica, now)
  local fields = redis.call('HGETALL', key)
  local counts = { 0, 0, 0 }
  for i = 1, #fields, 2 do
    local other = fields[i]
    if other ~= replica then
      if alive(replicas_key, other, now) then
        local class = 1
        for n in string.gmatch(fields[i + 1], '%d+') do
          if class <= 3 then counts[class] = counts[class] + tonumber(n) end
          class = class + 1
        end
      else
        redis.call('HDEL', key, other)
      end
    end
  end
  return counts
end

-- Of `counts` (waiting_by_class), the waiters of a class strictly better than `rank` (0 = interactive).
local function better_than(counts, rank)
  local sum = 0
  for class = 1, rank do sum = sum + counts[class] end
  return sum
end

-- The other live replicas' waiters on a lane budget of a class strictly better than `rank`.
local function better_waiting(replicas_key, key, replica, rank, now)
  return better_than(waiting_by_class(replicas_key, key, replica, now), rank)
end
