-- Revokes a user coupon in Redis, before MySQL (seckillctl coupon revoke): from here on
-- use.lua refuses it, so no redemption can start on a coupon MySQL is about to call
-- REVOKED. Written even when the record itself is not in Redis yet (the consumer publishes
-- it after its commit, with HSETNX, next to this mark). A coupon used here, or whose
-- refund is still being recorded, is refused: MySQL may not yet know it is used.
-- KEYS: 1 the user's coupon hash   ARGV: 1 userCouponId  2 now ms
-- Returns {'OK'} | {'USED', orderRef} | {'PENDING'}
local used = redis.call('HGET', KEYS[1], ARGV[1] .. ':used')
if used then
  return {'USED', string.match(used, '^([^|]*)|')}
end
if tonumber(redis.call('HGET', KEYS[1], ARGV[1] .. ':pending') or '0') > tonumber(ARGV[2]) then
  return {'PENDING'}
end
redis.call('HSETNX', KEYS[1], ARGV[1] .. ':revoked', ARGV[2])
return {'OK'}
