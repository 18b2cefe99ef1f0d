-- A SUCCESS order cancelled by the shop (seckillctl order cancel), on its bucket, after
-- its user coupon was revoked (revoke.lua) and before MySQL: CANCELLED in the orders hash,
-- its unit back in the stock key and out of the 'sold' count, in one step, so I3 (stock
-- key + live reservations + SUCCESS + returned = stock) holds throughout. The unit is on
-- sale again while the sale runs; once it has ended (or was cancelled) the stock key is
-- the coupon's, so it goes back to the coupon (ctlallotment.h). The user keeps their place
-- in the users hash: a cancelled order keeps its slot (MySQL's row stays).
-- finalize.lua never turns a CANCELLED order SUCCESS again, and confirm.lua rejects it.
-- KEYS: 1 activity  2 stock  3 orders      ARGV: 1 orderNo
-- Returns {'OK'} | {'CANCELLED'} cancelled before | {'ARCHIVED'} the sale's keys are gone
--       | {'NOT_SUCCESS', status} not (yet) SUCCESS here: '' when unknown
if redis.call('HEXISTS', KEYS[1], 'archived') == 1 then
  return {'ARCHIVED'}
end
local status = redis.call('HGET', KEYS[3], ARGV[1])
if status == 'CANCELLED' then
  return {'CANCELLED'}
end
if status ~= 'SUCCESS' then
  return {'NOT_SUCCESS', status or ''}
end
redis.call('HSET', KEYS[3], ARGV[1], 'CANCELLED')
redis.call('INCR', KEYS[2])
if redis.call('HEXISTS', KEYS[1], 'sold') == 1 then
  redis.call('HINCRBY', KEYS[1], 'sold', -1)
end
return {'OK'}
