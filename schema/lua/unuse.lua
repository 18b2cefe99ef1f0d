-- Undoes a redemption whose event never reached Kafka, so the coupon can be used again.
-- Only the redemption by this order reference is undone, with its pending mark (use.lua).
-- KEYS: 1 the user's coupon hash      ARGV: 1 userCouponId  2 orderRef
-- Returns 1 when undone, 0 when there was nothing of this reference to undo.
local used_field = ARGV[1] .. ':used'
local used = redis.call('HGET', KEYS[1], used_field)
if used and string.sub(used, 1, #ARGV[2] + 1) == ARGV[2] .. '|' then
  redis.call('HDEL', KEYS[1], used_field, ARGV[1] .. ':pending')
  return 1
end
return 0
