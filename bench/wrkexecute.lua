-- wrk script of every HTTP scenario of `make bench` (the baseline too, so that wrk does
-- the same work per request in each): POST /seckill/execute with a different user on
-- every request.
--
--   wrk -t2 -c64 -d12s --latency -s bench/wrkexecute.lua http://127.0.0.1:8080 -- ACTIVITY USER_BASE [xff]
--
-- The user of a request is USER_BASE + thread number * 10^9 + the thread's request count,
-- so no two requests of a run share a user and runs with bases 10^10 apart never meet.
-- With "xff" every request also carries `X-Forwarded-For: 10.a.b.c`, one address per 64
-- consecutive users (the protection-on scenarios, behind http.trust-forwarded-for): each
-- address then sends 64 requests, under the shipped per-IP limit of 100 a minute.
-- done() prints one line "BENCH_JSON {...}" with wrk's counts and latency distribution
-- (microseconds) for bench/bench.py.

local threads = 0

function setup(thread)
  threads = threads + 1
  thread:set("thread_no", threads)
end

local activity, user_base, count, xff
local headers = { ["Content-Length"] = "0" }

function init(args)
  activity = args[1] or "1"
  user_base = tonumber(args[2] or "1000000000") + thread_no * 1e9
  xff = args[3] == "xff"
  count = 0
end

function request()
  count = count + 1
  local user = user_base + count
  local path = string.format("/seckill/execute?userId=%.0f&activityId=%s", user, activity)
  if xff then
    local ip = math.floor(user / 64) % 16777216
    headers["X-Forwarded-For"] = string.format("10.%d.%d.%d", math.floor(ip / 65536),
                                               math.floor(ip / 256) % 256, ip % 256)
  end
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
