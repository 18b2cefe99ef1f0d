-- Pauses or resumes a sale while its coupon is deactivated: execute.lua refuses a paused
-- activity from the next call on, on every gateway. Only a warmed activity is touched, so
-- a missing hash stays missing (how warmup knows to rebuild the sale from MySQL).
-- KEYS: 1 activity      ARGV: 1 '1' pause | '0' resume
-- Returns 1 when the activity is warmed (and now in that state), else 0.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
redis.call('HSET', KEYS[1], 'paused', ARGV[1])
return 1
