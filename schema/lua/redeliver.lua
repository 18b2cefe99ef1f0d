-- With seckill.order.reply-after-ack = false a client is told 200 once its reservation is
-- made, before Kafka has the order, so a reservation is never expired: a reaper hands the
-- stale ones back to Kafka instead (a gateway died before delivering them, or its
-- deliveries kept failing). This returns them, oldest first, and moves each to now in the
-- resv zset, so that it comes back one seckill.pre-reduce-timeout later unless a queued
-- mark or a consumer's claim takes it out of the zset first. A copy too many in Kafka is
-- harmless: confirm.lua answers CONFIRMED and the row is written once.
-- KEYS: 1 resv
-- ARGV: cutoff_ms, max_count [, 'own', node | , 'except', ',n1,n2,']  (as release.lua)
-- Returns the members "orderNo|userId" taken.
-- reaper_takes: prelude.lua.
local limit = tonumber(ARGV[2])
-- Others' reservations are skipped, so look further than the limit.
local window = ARGV[3] and limit * 4 or limit
local members = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[1], 'LIMIT', 0, window)
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local taken = {}
for _, member in ipairs(members) do
  if #taken >= limit then
    break
  end
  local bar = string.find(member, '|', 1, true)
  if bar and reaper_takes(string.sub(member, 1, bar - 1), ARGV[3], ARGV[4]) then
    redis.call('ZADD', KEYS[1], 'XX', now_ms, member)
    taken[#taken + 1] = member
  end
end
return taken
