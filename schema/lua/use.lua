-- Redeems a user coupon at checkout, atomically: the first order reference wins, the same
-- reference gets the same answer again, any other is refused. The gateway has read the
-- coupon's terms and computed the amounts with its one discount function.
-- While the redemption's coupon.used event is not yet acknowledged by Kafka, the field
-- <id>:pending holds a deadline (ms): a failed delivery undoes the redemption (unuse.lua),
-- so until the ack nobody may be told "redeemed" by a repeat. The deadline bounds a mark
-- whose gateway died before it could clear it. A refund sets the same mark (refund.lua):
-- until its coupon.refunded is acknowledged no new redemption may start, so that the
-- events of one coupon reach Kafka in the order Redis applied them.
-- KEYS: 1 the user's coupon hash seckill:ucoupon:{u<userId>}
-- ARGV: 1 userCouponId  2 orderRef  3 discount cents  4 payable cents  5 now ms
--       6 pending until ms
-- Returns {'OK', seq} | {'REPEAT', discount, payable} | {'PENDING'} | {'USED', otherOrderRef}
--       | {'REVOKED'} | {'NOT_FOUND'}
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  return {'NOT_FOUND'}
end
if redis.call('HEXISTS', KEYS[1], ARGV[1] .. ':revoked') == 1 then
  return {'REVOKED'}
end
local used_field = ARGV[1] .. ':used'
local pending_field = ARGV[1] .. ':pending'
local used = redis.call('HGET', KEYS[1], used_field)
local pending = tonumber(redis.call('HGET', KEYS[1], pending_field) or '0')
if used then
  local ref, discount, payable = string.match(used, '^([^|]*)|([^|]*)|([^|]*)|')
  if ref == ARGV[2] then
    if pending > tonumber(ARGV[5]) then
      return {'PENDING'}
    end
    return {'REPEAT', discount, payable}
  end
  return {'USED', ref}
end
if pending > tonumber(ARGV[5]) then
  return {'PENDING'}
end
redis.call('HSET', KEYS[1], used_field, ARGV[2] .. '|' .. ARGV[3] .. '|' .. ARGV[4] .. '|' .. ARGV[5],
           pending_field, ARGV[6])
return {'OK', tostring(next_coupon_seq(KEYS[1], ARGV[1], ARGV[5]))}
