-- Ends claimed orders that MySQL refused for good (a CHECK constraint, a value out of
-- range: the consumer dead-lettered them with the reason): like a release, the stock goes
-- back, the user is free to try again, the order is FAILED. Only members still in the
-- claimed set are ended, so a repeat (a replayed batch) changes nothing, and an order that
-- is SUCCESS (its row is in MySQL) is never touched.
-- The order is added to the failed stream with the reason REFUSED (as release.lua does).
-- KEYS: 1 stock  2 users  3 orders  4 claimed  5 failed
-- ARGV: orderNo1, userId1, orderNo2, ...
-- Returns the number of orders ended by this call.
local t = redis.call('TIME')
local now_ms = tostring(tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
-- Clients holding a GET ...?wait=N for these orders are woken by one SPUBLISH to
-- seckill:final:{tag} (the orders key's tag: the same slot, so in a Redis Cluster the
-- message stays on this shard): "<STATUS> <orderNo> <orderNo> ...".
local function publish_final(orders_key, status, order_nos)
  if #order_nos > 0 then
    redis.call('SPUBLISH', 'seckill:final:' .. string.match(orders_key, '{[^}]+}'),
      status .. ' ' .. table.concat(order_nos, ' '))
  end
end
local ended = 0
local failed = {}
for i = 1, #ARGV, 2 do
  local order_no, user = ARGV[i], ARGV[i + 1]
  if redis.call('SREM', KEYS[4], order_no .. '|' .. user) == 1 then
    redis.call('INCR', KEYS[1])
    if redis.call('HGET', KEYS[2], user) == order_no then
      redis.call('HDEL', KEYS[2], user)
    end
    redis.call('HSET', KEYS[3], order_no, 'FAILED')
    redis.call('XADD', KEYS[5], '*', 'o', order_no, 'u', user, 'r', 'REFUSED', 't', now_ms)
    ended = ended + 1
    failed[#failed + 1] = order_no
  end
end
publish_final(KEYS[3], 'FAILED', failed)
return ended
