-- Called only after the MySQL transaction holding these orders has committed, so that
-- SUCCESS is never visible before the row is.
-- KEYS: 1 orders  2 claimed  3 activity      ARGV: orderNo1, userId1, orderNo2, userId2, ...
-- The activity hash's 'sold' counts the orders SUCCESS (count_sold: prelude.lua): only an
-- order that was not SUCCESS yet counts, so a replayed batch adds nothing.
-- An archived sale (archive.lua) is left as it is: its orders were SUCCESS in Redis and in
-- MySQL when it was archived, so a redelivered one was confirmed before the archive and its
-- row is written again idempotently; nothing here may bring its keys back.
-- publish_final, count_sold: prelude.lua.
if redis.call('HEXISTS', KEYS[3], 'archived') == 1 then
  return #ARGV / 2
end
local done = {}
local newly = 0
for i = 1, #ARGV, 2 do
  local status = redis.call('HGET', KEYS[1], ARGV[i])
  -- A replayed batch confirmed while the order was SUCCESS, cancelled since
  -- (ordercancel.lua): it stays cancelled.
  if status ~= 'SUCCESS' and status ~= 'CANCELLED' then
    redis.call('HSET', KEYS[1], ARGV[i], 'SUCCESS')
    newly = newly + 1
  end
  redis.call('SREM', KEYS[2], ARGV[i] .. '|' .. ARGV[i + 1])
  done[#done + 1] = ARGV[i]
end
count_sold(KEYS[3], newly)
publish_final(KEYS[1], 'SUCCESS', done)
return #ARGV / 2
