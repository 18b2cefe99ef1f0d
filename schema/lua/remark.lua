-- The consumer writes again, after its commit, the used mark of a redemption MySQL holds
-- where Redis lost it (a failover without redis.wait-replicas): without it another
-- checkout could redeem the coupon. Not when Redis has moved on since that redemption
-- (a refund, a later use: a higher <id>:seq), which the mark would undo.
-- KEYS: 1 the user's coupon hash   ARGV: 1 userCouponId  2 the :used value  3 its seq
-- Returns 1 when written again, 0 otherwise.
if redis.call('HEXISTS', KEYS[1], ARGV[1] .. ':used') == 1 or
   redis.call('HEXISTS', KEYS[1], ARGV[1] .. ':revoked') == 1 or
   tonumber(redis.call('HGET', KEYS[1], ARGV[1] .. ':seq') or '0') > tonumber(ARGV[3]) then
  return 0
end
redis.call('HSET', KEYS[1], ARGV[1] .. ':used', ARGV[2])
if tonumber(ARGV[3]) > 0 then
  redis.call('HSET', KEYS[1], ARGV[1] .. ':seq', ARGV[3])
end
return 1
