-- Ends claimed orders that MySQL refused for good (a CHECK constraint, a value out of
-- range: the consumer dead-lettered them with the reason): like a release, the stock goes
-- back, the user is free to try again, the order is FAILED. Only members still in the
-- claimed set are ended, so a repeat (a replayed batch) changes nothing, and an order that
-- is SUCCESS (its row is in MySQL) is never touched.
-- The order is added to the failed stream with the reason REFUSED (as release.lua does).
-- KEYS: 1 stock  2 users  3 orders  4 claimed  5 failed  6 failed users
-- ARGV: orderNo1, userId1, orderNo2, ...
-- Returns the number of orders ended by this call.
-- fail_order, publish_final: prelude.lua.
local t = redis.call('TIME')
local now_ms = tostring(tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
local ended = 0
local failed = {}
for i = 1, #ARGV, 2 do
  local order_no, user = ARGV[i], ARGV[i + 1]
  if redis.call('SREM', KEYS[4], order_no .. '|' .. user) == 1 then
    redis.call('INCR', KEYS[1])
    fail_order(KEYS[2], KEYS[3], KEYS[5], KEYS[6], order_no, user, 'REFUSED', now_ms)
    ended = ended + 1
    failed[#failed + 1] = order_no
  end
end
publish_final(KEYS[3], 'FAILED', failed)
return ended
