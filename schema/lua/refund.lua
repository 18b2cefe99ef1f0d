-- Gives a redeemed user coupon back when the checkout that used it is refunded: only the
-- order reference that used it may, and the same refund again gets the same answer.
-- <id>:refunded keeps the last refund ("orderRef|refundedAtMs|seq") for that repeat, also
-- once the coupon is used again by another checkout. Like a redemption, the refund holds
-- <id>:pending until its coupon.refunded is acknowledged (use.lua), and a failed delivery
-- undoes it (unrefund.lua) with the values returned here. A repeat that finds the mark
-- lapsed (its gateway died before Kafka answered, so the event may never have been
-- produced) is told to produce it again, with the same seq, which the consumer applies at
-- most once; the mark is set again meanwhile.
-- KEYS: 1 the user's coupon hash   ARGV: 1 userCouponId  2 orderRef  3 now ms  4 pending until ms
-- Returns {'OK', seq, usedValue, previousRefunded} | {'REPEAT', refundedAtMs}
--       | {'RESEND', refundedAtMs, seq} | {'PENDING'} | {'OTHER', usedByOrderRef} | {'NOT_USED'}
--       | {'NOT_FOUND'}
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  return {'NOT_FOUND'}
end
local used = redis.call('HGET', KEYS[1], ARGV[1] .. ':used')
local refunded = redis.call('HGET', KEYS[1], ARGV[1] .. ':refunded')
local pending = redis.call('HGET', KEYS[1], ARGV[1] .. ':pending')
local now = tonumber(ARGV[3])
local last_ref, last_at, last_seq
if refunded then
  last_ref, last_at, last_seq = string.match(refunded, '^([^|]*)|([^|]*)|(.*)$')
end
if used then
  local ref = string.match(used, '^([^|]*)|')
  if ref == ARGV[2] then
    if tonumber(pending or '0') > now then
      return {'PENDING'}   -- its redemption is not acknowledged yet
    end
    local seq = next_coupon_seq(KEYS[1], ARGV[1], ARGV[3])
    redis.call('HDEL', KEYS[1], ARGV[1] .. ':used')
    redis.call('HSET', KEYS[1], ARGV[1] .. ':refunded', ARGV[2] .. '|' .. ARGV[3] .. '|' .. seq,
               ARGV[1] .. ':pending', ARGV[4])
    return {'OK', tostring(seq), used, refunded or ''}
  end
  if last_ref == ARGV[2] then
    return {'REPEAT', last_at}
  end
  return {'OTHER', ref}
end
if last_ref == ARGV[2] then
  if pending and tonumber(pending) > now then
    return {'PENDING'}
  end
  if pending then
    redis.call('HSET', KEYS[1], ARGV[1] .. ':pending', ARGV[4])
    return {'RESEND', last_at, last_seq}
  end
  return {'REPEAT', last_at}
end
return {'NOT_USED'}
