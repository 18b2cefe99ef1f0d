-- Cancels a sale at once for every gateway: the execute script refuses a CANCELLED
-- activity from the next call on. The unsold stock is taken off the sale and returned so
-- that seckillctl can hand it back to the coupon. Reservations still live end as usual:
-- a confirmed one is sold, an expired one returns its unit to the (now closed) stock key.
-- KEYS: 1 activity  2 stock
-- Returns the unsold stock taken off, or -1 when the activity is not warmed.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
redis.call('HSET', KEYS[1], 'status', 'CANCELLED')
local left = tonumber(redis.call('GET', KEYS[2]) or '0')
redis.call('SET', KEYS[2], '0')
return left
