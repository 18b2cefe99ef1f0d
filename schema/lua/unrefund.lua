-- Undoes a refund whose coupon.refunded never reached Kafka: the coupon is used again by
-- the order reference it was used by, as it was before refund.lua.
-- KEYS: 1 the user's coupon hash
-- ARGV: 1 userCouponId  2 orderRef  3 the :used value refund.lua removed
--       4 the :refunded value it replaced ('' when none)
-- Returns 1 when undone, 0 when there was nothing of this refund to undo.
local refunded = redis.call('HGET', KEYS[1], ARGV[1] .. ':refunded')
if redis.call('HEXISTS', KEYS[1], ARGV[1] .. ':used') == 1 or not refunded or
   string.sub(refunded, 1, #ARGV[2] + 1) ~= ARGV[2] .. '|' then
  return 0
end
redis.call('HSET', KEYS[1], ARGV[1] .. ':used', ARGV[3])
if ARGV[4] == '' then
  redis.call('HDEL', KEYS[1], ARGV[1] .. ':refunded', ARGV[1] .. ':pending')
else
  redis.call('HSET', KEYS[1], ARGV[1] .. ':refunded', ARGV[4])
  redis.call('HDEL', KEYS[1], ARGV[1] .. ':pending')
end
return 1
