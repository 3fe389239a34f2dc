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

-- What a bucket has drawn (src/core/drawn-log.ts, the same rule): field `d` of its hash, the
-- running total of takes and charges (never lowered by a refund), and `x<slot>` = "second total"
-- written before each second's first draw, for the last 300 seconds (slot = second mod 300). They
-- expire with the hash, which happens only once the bucket is full again: a refund of a call
-- granted before then is bounded by the draws after it (a full bucket's correction is moot).
local DRAWN_SECONDS = 300
local GRANT_SKEW_MS = 2000
local function drawn_slot(second)
  return 'x' .. (second % DRAWN_SECONDS)
end

local function bucket_draw(key, amount, now)
  if amount <= 0 then return end
  local second = math.floor(now / 1000)
  local slot = drawn_slot(second)
  local h = redis.call('HMGET', key, 'd', slot)
  local total = tonumber(h[1]) or 0
  local sampled = h[2] and tonumber(string.match(h[2], '^(%-?%d+)'))
  if sampled ~= second then redis.call('HSET', key, slot, second .. ' ' .. tostring(total)) end
  redis.call('HSET', key, 'd', tostring(total + amount))
end

-- The ceiling a refund of a call granted at `granted` (Redis ms) may lift the level to now
-- (DrawnLog.ceiling): for each second with draws from GRANT_SKEW_MS before the grant on, cap +
-- the refill after that second - what was drawn from its start - what the call used (`spent`);
-- the lowest of them, cap - spent when there is none. nil when the grant is older than the
-- samples kept.
local function drawn_ceiling(key, granted, now, cap, spent)
  local first = math.floor((granted - GRANT_SKEW_MS) / 1000)
  local last = math.floor(now / 1000)
  if last - first >= DRAWN_SECONDS then return nil end
  local fields = { 'd' }
  for s = first, last do fields[#fields + 1] = drawn_slot(s) end
  local h = redis.call('HMGET', key, unpack(fields))
  local total = tonumber(h[1]) or 0
  local low = cap - spent
  for s = first, last do
    local v = h[s - first + 2]
    if v then
      local second, before = string.match(v, '^(%-?%d+) (.+)$')
      if tonumber(second) == s then
        local refill = math.max(0, now - (s + 1) * 1000) * cap / MINUTE_MS
        local bound = cap + refill - (total - tonumber(before)) - spent
        if bound < low then low = bound end
      end
    end
  end
  return low
end

-- The level after a settlement (rate-budget.ts settledLevel): a charge lowers it (debt carried);
-- a refund lifts it by `delta` (the refill bound) up to `cap`, or by up to all of `unused` as far
-- as `ceiling` when the drawn bound is known, whichever is higher, never lower than it was.
local function settled_level(level, delta, unused, ceiling, cap)
  if delta < 0 then return level + delta end
  local nxt = math.max(level, math.min(level + delta, cap))
  if ceiling ~= nil and unused > delta then nxt = math.max(nxt, math.min(level + unused, ceiling, cap)) end
  return nxt
end

-- A waiters field's value (store/redis/flow-advert.ts): the counts per effective class on the
-- first line, "interactive default bulk", then one line per flow waiting there, "<class> <weight>
-- <token>" (class 0 = interactive; token: the flow's URI-encoded name, '@anon' for calls with no
-- key, '@rest' for the flows past the advertisement's cap). Returns { counts = { i, d, b },
-- flows = { { class (1-based), weight, token } } }.
local function parse_waiters(value)
  local entry = { counts = { 0, 0, 0 }, flows = {} }
  local first = true
  for line in string.gmatch(value, '[^\n]+') do
    if first then
      local class = 1
      for n in string.gmatch(line, '%d+') do
        if class <= 3 then entry.counts[class] = tonumber(n) end
        class = class + 1
      end
      first = false
    else
      local class, weight, token = string.match(line, '^(%d) (%S+) (%S+)$')
      local w = tonumber(weight)
      if class and w and w > 0 then entry.flows[#entry.flows + 1] = { tonumber(class) + 1, w, token } end
    end
  end
  return entry
end

-- The live replicas' fields of a waiters hash ({P}:w:<budget>), parsed, each with its `id`; this
-- replica's own is `mine` (an empty one when it has not advertised there yet). Fields of dead
-- replicas are dropped on the way, like their counts.
local function lane_entries(replicas_key, key, replica, now)
  local fields = redis.call('HGETALL', key)
  local entries = {}
  local mine = nil
  for i = 1, #fields, 2 do
    local id = fields[i]
    if id == replica then
      mine = parse_waiters(fields[i + 1])
    elseif alive(replicas_key, id, now) then
      local entry = parse_waiters(fields[i + 1])
      entry.id = id
      entries[#entries + 1] = entry
    else
      redis.call('HDEL', key, id)
    end
  end
  mine = mine or parse_waiters('')
  mine.id = replica
  return entries, mine
end

-- Weighted fair queuing across replicas (issue 24): the flows that wait on the lane in `class`
-- (1-based) or a better one, per replica. A flow waiting on k replicas counts 1/k of its weight
-- on each. A replica whose field names no flow there but counts waiters (or this replica, before
-- its advertisement is in) counts as one flow of weight 1 of its own, and so do the flows past
-- the cap ('@rest', their weights added up): unnamed, they cannot be matched across replicas.
-- Returns spread (token -> on how many replicas it waits), weight (token -> its weight), and
-- the tokens of `mine`.
local function flow_spreads(entries, mine, class)
  local spread, weight = {}, {}
  local my_tokens = nil
  local function visit(e)
    local seen, list, waits = {}, {}, 0
    for k = 1, class do waits = waits + e.counts[k] end
    for _, f in ipairs(e.flows) do
      if f[1] <= class then
        local token = f[3]
        if token == '@rest' then token = '@rest:' .. e.id end
        if not seen[token] then
          seen[token] = true
          list[#list + 1] = token
          spread[token] = (spread[token] or 0) + 1
        end
        if weight[token] == nil or f[2] > weight[token] then weight[token] = f[2] end
      end
    end
    if #list == 0 and (waits > 0 or e == mine) then
      local token = '@own:' .. e.id
      list[1] = token
      spread[token] = 1
      weight[token] = 1
    end
    return list
  end
  for _, e in ipairs(entries) do visit(e) end
  my_tokens = visit(mine)
  return spread, weight, my_tokens
end

-- This replica's part of the lane for a call of `class` (1-based) while others wait: the weights
-- it serves (each flow's 1/k) over the weights of every flow waiting there, in (0, 1].
local function lane_part(entries, mine, class)
  local spread, weight, my_tokens = flow_spreads(entries, mine, class)
  local total, own = 0, 0
  for token, w in pairs(weight) do total = total + w end
  for _, token in ipairs(my_tokens) do own = own + weight[token] / spread[token] end
  if total <= 0 then return 1 end
  return own / total
end

-- Waiters the other live replicas advertise on a lane budget, summed per class: { interactive,
-- default, bulk }; per class, how many of those replicas have a waiter of that class or a better
-- one (their rivals for a call of the class: fair_share); and per class this replica's part of
-- the lane's weights (lane_part; 1 for interactive, never held back).
local function waiting_by_class(replicas_key, key, replica, now)
  local entries, mine = lane_entries(replicas_key, key, replica, now)
  local counts = { 0, 0, 0 }
  local rivals = { 0, 0, 0 }
  for _, e in ipairs(entries) do
    local waits = false
    for class = 1, 3 do
      counts[class] = counts[class] + e.counts[class]
      waits = waits or e.counts[class] > 0
      if waits then rivals[class] = rivals[class] + 1 end
    end
  end
  local parts = { 1, 1, 1 }
  for class = 2, 3 do
    if rivals[class] > 0 then parts[class] = lane_part(entries, mine, class) end
  end
  return counts, rivals, parts
end

-- Fairness within a class across replicas (issues 22 and 24): while `rivals` other replicas wait
-- on a lane with calls of class `rank` or better, a replica holds at most its part of the lane's
-- `limit` for this call — the weights of the flows it serves there over all the waiting flows'
-- (lane_part), rounded up (so the parts together never leave a slot idle). With every flow
-- anonymous or of one weight on its own replica that is an equal share per replica. Without it,
-- the replica whose call ended granted its own next waiter before the other replicas heard of
-- the release, and whoever held the slots kept them. An interactive call is never held back: a
-- waiter advertised as interactive may be a bulk call aged there, which cannot use the
-- interactive reserve, so room left for it could stay idle.
local function fair_share(limit, rivals, rank, parts)
  local n = rivals[rank + 1]
  if n == 0 or rank == 0 then return limit end
  return math.min(limit, math.ceil(limit * parts[rank + 1] - 1e-9))
end

-- Of `counts` (waiting_by_class), the waiters of a class strictly better than `rank` (0 = interactive).
local function better_than(counts, rank)
  local sum = 0
  for class = 1, rank do sum = sum + counts[class] end
  return sum
end

