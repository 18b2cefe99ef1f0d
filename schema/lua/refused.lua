-- Adds one gateway's refusals of a sale since its last add (gateway/refusals.c, on a
-- timer, never on the request path) to the sale's activity hash, one field per reason,
-- 'refused:<STATUS>' (OUT_OF_STOCK, DUPLICATE, RATE_LIMITED, UNAVAILABLE, ...), which
-- `seckillctl activity show` and the console read. O(reasons), whatever the traffic.
-- Nothing is added to a hash that is gone (the counts alone would make a hash that looks
-- like a sale) or archived (archive.lua: no script writes an archived sale).
-- KEYS: 1 activity      ARGV: status1, count1, status2, count2, ...
-- Returns 1 when added, 0 when not.
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('HEXISTS', KEYS[1], 'archived') == 1 then
  return 0
end
for i = 1, #ARGV, 2 do
  redis.call('HINCRBY', KEYS[1], 'refused:' .. ARGV[i], ARGV[i + 1])
end
return 1
