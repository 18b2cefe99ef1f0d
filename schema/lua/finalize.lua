-- Called only after the MySQL transaction holding these orders has committed, so that
-- SUCCESS is never visible before the row is.
-- KEYS: 1 orders  2 claimed      ARGV: orderNo1, userId1, orderNo2, userId2, ...
-- publish_final: prelude.lua.
local done = {}
for i = 1, #ARGV, 2 do
  redis.call('HSET', KEYS[1], ARGV[i], 'SUCCESS')
  redis.call('SREM', KEYS[2], ARGV[i] .. '|' .. ARGV[i + 1])
  done[#done + 1] = ARGV[i]
end
publish_final(KEYS[1], 'SUCCESS', done)
return #ARGV / 2
