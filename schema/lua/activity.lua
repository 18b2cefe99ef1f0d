-- Read-only view of an activity for the gateway's cache and GET /seckill/activities.
-- KEYS: 1 activity  2 stock  3 users
-- Returns {} when the activity is not warmed, else
--   {name, couponId, stock, start_ms, end_ms, status, stockLeft, holders, tags, paused, coupon,
--    perUser}
-- tags = the bucket tags of a bucketed activity ("A,A.1.s,..."; bucket.h), '' otherwise.
-- holders = users holding an order (HLEN of the users hash: slots held, where perUser > 1):
-- the gateway compares it with its local copy of the winners to know when that copy is
-- complete. perUser = the orders one user may hold (execute.lua), '1' when unset.
-- paused = '1' while the coupon is deactivated; coupon = the coupon's record (its terms
-- and name, usercoupon.h), '' for a sale warmed before the hash kept it.
local meta = redis.call('HMGET', KEYS[1], 'name', 'couponId', 'stock', 'start', 'end', 'status', 'tags',
  'stockLeft', 'paused', 'coupon', 'perUser')
if not meta[4] then
  return {}
end
local tags = meta[7] or ''
-- An archived sale's stock key is gone; its hash keeps the stock it had left ('stockLeft').
meta[7] = redis.call('GET', KEYS[2]) or meta[8] or '0'
meta[8] = tostring(redis.call('HLEN', KEYS[3]))
local paused, coupon, per_user = meta[9] or '0', meta[10] or '', meta[11] or '1'
meta[9] = tags
meta[10] = paused
meta[11] = coupon
meta[12] = per_user
for i = 1, 6 do
  if not meta[i] then meta[i] = '' end
end
return meta
