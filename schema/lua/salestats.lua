-- One sale's accounting, read at one instant for the gateway's /metrics (salestats.c, on a
-- timer, never on the request path): the terms of invariant I3 and the oldest reservation.
-- Read-only, and O(1) in the orders of the sale: every term is a counter or a cardinality
-- Redis keeps (sold is the activity hash's 'sold', which the scripts that turn an order
-- SUCCESS maintain: count_sold, prelude.lua), never a walk of the orders hash, which stalled
-- every client of Redis for a second on a sale of two million orders.
-- KEYS: 1 activity  2 stock  3 resv  4 queued  5 claimed
-- Returns {} when the activity is not warmed, else
--   {stock, left, reserved, queued, claimed, sold, returned, oldest_ms}
-- stock = the initial stock; left = the stock key (0 when missing: Redis lost it, which
-- breaks the balance as it should); sold = orders SUCCESS, -1 when unknown (a sale warmed
-- before the counter existed has none); returned = unsold stock taken off by a cancel;
-- oldest_ms = accept time of the oldest reservation not yet in Kafka, -1 when there is
-- none. I3 holds when left + reserved + queued + claimed + sold + returned = stock.
local meta = redis.call('HMGET', KEYS[1], 'stock', 'returned', 'sold')
if not meta[1] then
  return {}
end
local oldest = -1
local first = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
if first[2] then
  oldest = tonumber(first[2])
end
return {
  tonumber(meta[1]) or 0,
  tonumber(redis.call('GET', KEYS[2]) or '0') or 0,
  redis.call('ZCARD', KEYS[3]),
  redis.call('SCARD', KEYS[4]),
  redis.call('SCARD', KEYS[5]),
  tonumber(meta[3] or '-1') or -1,
  tonumber(meta[2] or '0') or 0,
  oldest,
}
