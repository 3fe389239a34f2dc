-- wrk script for the wrk-driven retry storm of the gateway benchmark (bench/gateway/wrk-storm.ts).
-- wrk itself counts every status above 399 as "Non-2xx or 3xx responses" and keeps one latency
-- histogram for all answers; this script counts each status and keeps the latency of answered
-- calls (200s) apart, so "answered p99" is the 200s' own and not diluted by refusals.
--
-- A connection's request carries its send time (`x-wrk-t`, µs of CLOCK_MONOTONIC, taken as wrk
-- starts the request's clock); the pods of the bench echo it back on their answer (wrk-storm.ts
-- hooks them), and the proxies pass it through. wrk's Lua has no connection identity, so this is
-- the way to pair an answer with its request. A refusal made by a proxy carries no echo (and
-- this wrk's Lua gives percentiles of its histogram, not its buckets), so refusals have no
-- latency of their own here: wrk's p50/p99 of every answer is printed beside the 200s'.
--
--   wrk -t2 -c256 -d10s --latency -s wrk-storm.lua URL  (env WRK_BODY: the JSON body to POST)
local ffi = require("ffi")
ffi.cdef([[
typedef struct { long tv_sec; long tv_nsec; } wrk_timespec;
int clock_gettime(int clk_id, wrk_timespec *tp);
]])
local ts = ffi.new("wrk_timespec")
local function now_us()
  ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
  return tonumber(ts.tv_sec) * 1000000 + math.floor(tonumber(ts.tv_nsec) / 1000)
end

-- WRK_DELAY_MS: each connection waits this long before each request (a rate, not a storm: the
-- CPU-at-100-requests/s runs of rate-cpu.ts).
local pause = tonumber(os.getenv("WRK_DELAY_MS") or "")
if pause ~= nil then
  function delay()
    return pause
  end
end

local threads = {}
local body = os.getenv("WRK_BODY") or "{}"
local headers = { ["Content-Type"] = "application/json" }

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  statuses = {}
  -- 200s' latency, µs → count (sparse), copied to done() by thread:get.
  ok_us = {}
  ok_n = 0
  -- Per second of the run: 200s, 200s slower than 1 s, refusals (how a cold start ramps).
  t_start = now_us()
  -- Flat tables: thread:get copies a table of numbers, not a table of tables.
  sec_ok = {}
  sec_slow = {}
  sec_other = {}
end

function request()
  headers["x-wrk-t"] = tostring(now_us())
  return wrk.format("POST", nil, headers, body)
end

function response(status, hdrs, _)
  statuses[status] = (statuses[status] or 0) + 1
  local now = now_us()
  local sec = math.floor((now - t_start) / 1000000)
  if status ~= 200 then sec_other[sec] = (sec_other[sec] or 0) + 1 end
  if status == 200 then
    local t = tonumber(hdrs["x-wrk-t"])
    if t ~= nil then
      local us = now - t
      ok_us[us] = (ok_us[us] or 0) + 1
      ok_n = ok_n + 1
      sec_ok[sec] = (sec_ok[sec] or 0) + 1
      if us > 1000000 then sec_slow[sec] = (sec_slow[sec] or 0) + 1 end
    end
  end
end

-- The p-th percentile (0-100) of a sparse histogram {µs = count} of n values.
local function percentile(hist, n, p)
  if n == 0 then return -1 end
  local keys = {}
  for k in pairs(hist) do keys[#keys + 1] = k end
  table.sort(keys)
  local want = math.max(1, math.ceil(n * p / 100))
  local seen = 0
  for _, k in ipairs(keys) do
    seen = seen + hist[k]
    if seen >= want then return k end
  end
  return keys[#keys]
end

function done(summary, latency, requests)
  local all_status = {}
  local ok = {}
  local n_ok = 0
  local secs = {}
  for _, t in ipairs(threads) do
    for s, c in pairs(t:get("statuses")) do all_status[s] = (all_status[s] or 0) + c end
    for us, c in pairs(t:get("ok_us")) do ok[us] = (ok[us] or 0) + c end
    n_ok = n_ok + t:get("ok_n")
    for i, name in ipairs({ "sec_ok", "sec_slow", "sec_other" }) do
      for sec, c in pairs(t:get(name)) do
        local into = secs[sec] or { 0, 0, 0 }
        into[i] = into[i] + c
        secs[sec] = into
      end
    end
  end
  local by_sec = {}
  for sec = 0, 59 do
    local row = secs[sec]
    if row ~= nil then by_sec[#by_sec + 1] = sec .. ":" .. row[1] .. ":" .. row[2] .. ":" .. row[3] end
  end
  local parts = {}
  for s, c in pairs(all_status) do parts[#parts + 1] = s .. ":" .. c end
  local e = summary.errors
  io.write(string.format(
    "WRKSTORM requests=%d duration_us=%d statuses=%s ok_timed=%d ok_p50_us=%d ok_p99_us=%d ok_max_us=%d all_p50_us=%d all_p99_us=%d connect=%d read=%d write=%d timeout=%d per_sec=%s\n",
    summary.requests, summary.duration, table.concat(parts, ","), n_ok,
    percentile(ok, n_ok, 50), percentile(ok, n_ok, 99), percentile(ok, n_ok, 100),
    latency:percentile(50), latency:percentile(99),
    e.connect, e.read, e.write, e.timeout, table.concat(by_sec, ",")))
end
