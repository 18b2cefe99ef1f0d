-- The consumer claims orders before writing them to MySQL. A claimed order can no longer
-- be released by a rollback or the reaper; a FAILED order is never written.
-- An order Redis lost and cannot honour ends FAILED here, and is added to the failed
-- stream with the reason REJECTED (as release.lua does).
-- KEYS: 1 stock  2 users  3 orders  4 resv  5 queued  6 claimed  7 activity  8 failed
-- ARGV: orderNo1, userId1, orderNo2, userId2, ...
-- Returns one verdict per order, in order:
--   'CLAIMED'   reservation taken over, write the row
--   'CONFIRMED' already claimed or SUCCESS (redelivery), write the row again idempotently
--   'REJECTED'  the order was released (FAILED), cancelled by the shop since it was
--               SUCCESS (ordercancel.lua: its row is in MySQL, CANCELLED), or cannot be
--               honoured, skip it
--   'ARCHIVED'  the sale is archived (archive.lua): every order of it was final and in
--               MySQL when it was, and nothing here is written; the consumer looks the
--               order up in MySQL (archived.c)
-- record_failed, publish_final: prelude.lua.
local verdicts = {}
local failed = {}
if redis.call('HEXISTS', KEYS[7], 'archived') == 1 then
  for i = 1, #ARGV, 2 do
    verdicts[#verdicts + 1] = 'ARCHIVED'
  end
  return verdicts
end
for i = 1, #ARGV, 2 do
  local order_no, user = ARGV[i], ARGV[i + 1]
  local member = order_no .. '|' .. user
  local status = redis.call('HGET', KEYS[3], order_no)
  local verdict
  if status == 'FAILED' or status == 'CANCELLED' then
    verdict = 'REJECTED'
  elseif status == 'SUCCESS' or redis.call('SISMEMBER', KEYS[6], member) == 1 then
    verdict = 'CONFIRMED'
  elseif redis.call('ZREM', KEYS[4], member) == 1 or redis.call('SREM', KEYS[5], member) == 1 then
    redis.call('SADD', KEYS[6], member)
    verdict = 'CLAIMED'
  elseif status == false then
    -- Redis lost this order (restart without it, re-warmed from MySQL). Kafka says it was
    -- accepted: honour it if stock and the one-per-user rule still allow, else reject.
    -- Not for a cancelled sale, nor one ended more than 5 s ago: their unsold stock already
    -- went back to the coupon (seckillctl's allotment), and taking it again could issue
    -- more coupons than the coupon has.
    local stock = tonumber(redis.call('GET', KEYS[1]) or '0')
    local meta = redis.call('HMGET', KEYS[7], 'status', 'end')
    local t = redis.call('TIME')
    local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    local open = meta[1] ~= 'CANCELLED' and meta[2] and now_ms < tonumber(meta[2]) + 5000
    if open and stock > 0 and redis.call('HEXISTS', KEYS[2], user) == 0 then
      redis.call('DECR', KEYS[1])
      redis.call('HSET', KEYS[2], user, order_no)
      redis.call('HSET', KEYS[3], order_no, 'PROCESSING')
      redis.call('SADD', KEYS[6], member)
      verdict = 'CLAIMED'
    else
      record_failed(KEYS[3], KEYS[8], order_no, user, 'REJECTED', tostring(now_ms))
      verdict = 'REJECTED'
      failed[#failed + 1] = order_no
    end
  else
    verdict = 'REJECTED'
  end
  verdicts[#verdicts + 1] = verdict
end
publish_final(KEYS[3], 'FAILED', failed)
return verdicts
