-- One sale's accounting, read at one instant for the gateway's /metrics (salestats.c, on a
-- timer, never on the request path): the terms of invariant I3 and the oldest reservation.
-- Read-only. Counting SUCCESS walks the orders hash, O(orders of the sale): hence a timer
-- of seconds (seckill.sale-stats-interval-ms), not every scrape.
-- KEYS: 1 activity  2 stock  3 orders  4 resv  5 queued  6 claimed
-- Returns {} when the activity is not warmed, else
--   {stock, left, reserved, queued, claimed, sold, returned, oldest_ms}
-- stock = the initial stock; left = the stock key (0 when missing: Redis lost it, which
-- breaks the balance as it should); sold = orders SUCCESS; returned = unsold stock taken
-- off by a cancel; oldest_ms = accept time of the oldest reservation not yet in Kafka,
-- -1 when there is none. I3 holds when left + reserved + queued + claimed + sold +
-- returned = stock.
local meta = redis.call('HMGET', KEYS[1], 'stock', 'returned')
if not meta[1] then
  return {}
end
local sold = 0
for _, status in ipairs(redis.call('HVALS', KEYS[3])) do
  if status == 'SUCCESS' then
    sold = sold + 1
  end
end
local oldest = -1
local first = redis.call('ZRANGE', KEYS[4], 0, 0, 'WITHSCORES')
if first[2] then
  oldest = tonumber(first[2])
end
return {
  tonumber(meta[1]) or 0,
  tonumber(redis.call('GET', KEYS[2]) or '0') or 0,
  redis.call('ZCARD', KEYS[4]),
  redis.call('SCARD', KEYS[5]),
  redis.call('SCARD', KEYS[6]),
  sold,
  tonumber(meta[2] or '0') or 0,
  oldest,
}
