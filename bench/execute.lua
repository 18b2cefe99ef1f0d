-- wrk script of every HTTP scenario of `make bench` (the baseline too, so that wrk does
-- the same work per request in each): POST /seckill/execute with a different user on
-- every request.
--
--   wrk -t2 -c64 -d12s --latency -s bench/execute.lua http://127.0.0.1:8080 -- ACTIVITY USER_BASE
--
-- The user of a request is USER_BASE + thread number * 10^9 + the thread's request count,
-- so no two requests of a run share a user and runs with bases 10^10 apart never meet.
-- done() prints one line "BENCH_JSON {...}" with wrk's counts and latency distribution
-- (microseconds) for bench/bench.py.

local threads = 0

function setup(thread)
  threads = threads + 1
  thread:set("thread_no", threads)
end

local activity, user_base, count
local headers = { ["Content-Length"] = "0" }

function init(args)
  activity = args[1] or "1"
  user_base = tonumber(args[2] or "1000000000") + thread_no * 1e9
  count = 0
end

function request()
  count = count + 1
  local path = string.format("/seckill/execute?userId=%.0f&activityId=%s", user_base + count, activity)
  return wrk.format("POST", path, headers, "")
end

function done(summary, latency, requests)
  local pct = {}
  for _, p in ipairs({ 50, 75, 90, 99, 99.9 }) do
    pct[#pct + 1] = string.format('"p%s":%d', tostring(p), latency:percentile(p))
  end
  local e = summary.errors
  io.write(string.format(
    'BENCH_JSON {"duration_us":%d,"requests":%d,"bytes":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latency_us":{"min":%d,"max":%d,"mean":%.1f,"stdev":%.1f,%s}}\n',
    summary.duration, summary.requests, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency.min, latency.max, latency.mean, latency.stdev, table.concat(pct, ",")))
end
