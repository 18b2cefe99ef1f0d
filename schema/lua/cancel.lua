-- Cancels a sale at once for every gateway: the execute script refuses a CANCELLED
-- activity from the next call on. The unsold stock is taken off the sale and recorded in
-- the activity hash as 'returned', so that seckillctl (allotment) and verify (I3:
-- stock left + live reservations + SUCCESS + returned = stock) can account for it.
-- Reservations still live end as usual: a confirmed one is sold, an expired one returns
-- its unit to the (now closed) stock key, where it counts as unsold too; calling this
-- again moves such units into 'returned' as well. Idempotent.
-- KEYS: 1 activity  2 stock
-- Returns -1 when the activity is not warmed, -2 when it is archived (archive.lua: nothing
-- is left to cancel, and nothing is changed), else
--   {moved now, returned in total, 1 if it was already cancelled else 0}
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
if redis.call('HEXISTS', KEYS[1], 'archived') == 1 then
  return -2
end
local was = 0
if redis.call('HGET', KEYS[1], 'status') == 'CANCELLED' then
  was = 1
end
redis.call('HSET', KEYS[1], 'status', 'CANCELLED')
-- A missing stock key stays missing: it is how warmup knows to rebuild the sale from MySQL.
local left = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
local moved = 0
if left > 0 then
  moved = left
  redis.call('DECRBY', KEYS[2], moved)
end
local returned = redis.call('HINCRBY', KEYS[1], 'returned', moved)
return {moved, returned, was}
