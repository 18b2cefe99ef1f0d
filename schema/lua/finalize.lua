-- Called only after the MySQL transaction holding these orders has committed, so that
-- SUCCESS is never visible before the row is.
-- KEYS: 1 orders  2 claimed      ARGV: orderNo1, userId1, orderNo2, userId2, ...
-- Clients holding a GET ...?wait=N for these orders are woken by one SPUBLISH to
-- seckill:final:{tag} (the orders key's tag: the same slot, so in a Redis Cluster the
-- message stays on this shard): "<STATUS> <orderNo> <orderNo> ...".
local function publish_final(orders_key, status, order_nos)
  if #order_nos > 0 then
    redis.call('SPUBLISH', 'seckill:final:' .. string.match(orders_key, '{[^}]+}'),
      status .. ' ' .. table.concat(order_nos, ' '))
  end
end
local done = {}
for i = 1, #ARGV, 2 do
  redis.call('HSET', KEYS[1], ARGV[i], 'SUCCESS')
  redis.call('SREM', KEYS[2], ARGV[i] .. '|' .. ARGV[i + 1])
  done[#done + 1] = ARGV[i]
end
publish_final(KEYS[1], 'SUCCESS', done)
return #ARGV / 2
