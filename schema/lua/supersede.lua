-- Ends claimed orders that MySQL refused because an order Redis no longer knows already
-- holds their place there: after a master failover that lost writes (replication is
-- asynchronous), the promoted replica can sell a user, or a unit, a second time while the
-- first order is in Kafka or already in MySQL. MySQL keeps the first (UNIQUE(user_id,
-- activity_id), CHECK activity_sold_within_stock); here the loser ends FAILED and its unit
-- is NOT returned: it stands for the winner Redis forgot, which MySQL has sold. Returning
-- it would sell that unit once more. The winners MySQL holds are recorded SUCCESS (their
-- rows are committed), with their user's record pointing at them.
-- Each loser is added to the failed stream with the reason SUPERSEDED (as release.lua does).
-- KEYS: 1 users  2 orders  3 resv  4 queued  5 claimed  6 failed  7 activity (its 'sold'
--       counts the winners newly recorded SUCCESS: count_sold, prelude.lua)  8 failed users
-- ARGV: nlosers, then nlosers pairs orderNo, userId (the losers), then pairs orderNo, userId
--       of orders MySQL holds for the same sale (the winners)
-- Returns {losers ended by this call, winners newly recorded SUCCESS}. A repeat (a
-- replayed batch) changes nothing: only members still claimed are ended. An archived sale
-- (archive.lua) is not touched: {0, 0}.
-- fail_order, publish_final, count_sold: prelude.lua.
local nlosers = tonumber(ARGV[1])
if not nlosers or #ARGV < 1 + 2 * nlosers or (#ARGV - 1) % 2 ~= 0 then
  return redis.error_reply('supersede.lua: arguments do not describe losers and winners')
end
if redis.call('HEXISTS', KEYS[7], 'archived') == 1 then
  return {0, 0}
end
local ended, adopted = 0, 0
local failed, succeeded = {}, {}
local t = redis.call('TIME')
local now_ms = tostring(tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
for i = 0, nlosers - 1 do
  local order_no, user = ARGV[2 + 2 * i], ARGV[3 + 2 * i]
  if redis.call('SREM', KEYS[5], order_no .. '|' .. user) == 1 then
    fail_order(KEYS[1], KEYS[2], KEYS[6], KEYS[8], order_no, user, 'SUPERSEDED', now_ms)
    ended = ended + 1
    failed[#failed + 1] = order_no
  end
end
for i = 2 + 2 * nlosers, #ARGV, 2 do
  local order_no, user = ARGV[i], ARGV[i + 1]
  local member = order_no .. '|' .. user
  local status = redis.call('HGET', KEYS[2], order_no)
  -- A live order (reserved, queued, claimed) is its own consumer's to finish.
  local live = status == 'PROCESSING' and (redis.call('ZSCORE', KEYS[3], member)
    or redis.call('SISMEMBER', KEYS[4], member) == 1 or redis.call('SISMEMBER', KEYS[5], member) == 1)
  if status ~= 'SUCCESS' and not live then
    redis.call('HSET', KEYS[2], order_no, 'SUCCESS')
    adopted = adopted + 1
    status = 'SUCCESS'
    succeeded[#succeeded + 1] = order_no
  end
  if status == 'SUCCESS' then
    redis.call('HSET', KEYS[1], user, order_no)
  end
end
count_sold(KEYS[7], adopted)
publish_final(KEYS[2], 'FAILED', failed)
publish_final(KEYS[2], 'SUCCESS', succeeded)
return {ended, adopted}
