-- The end of a sale's life in Redis, on one bucket (seckillctl activity archive, the
-- consumer's lifecycle pass: src/store/archive.c). Once 'archived' is in the activity hash,
-- every script that writes a key of this bucket refuses (execute, confirm, finalize,
-- release, supersede, rebalance 'out', cancel), so nothing recreates what 'drop' removes.
-- The others cannot write here once the sale is quiet: queued.lua, abandon.lua and
-- redeliver.lua only move members that are still in the resv zset or the claimed set, and
-- rebalance 'in' only follows an 'out' whose record 'mark' requires gone.
-- KEYS: 1 activity  2 stock  3 users  4 orders  5 resv  6 queued  7 claimed  8 failed
--       9 xfer-out  10 xfer-in  11 failed users
-- ARGV: 'mark', now_ms, sold   sets 'archived' = now_ms, and 'stockLeft' = the bucket's
--                              stock key, when nothing of the bucket is in flight; sold =
--                              the SUCCESS count the caller found (checked against the
--                              hash's 'sold' when it has one), '' for no check
--         -> {'OK', now_ms} | {'ARCHIVED', ms} (marked before: kept as it was)
--          | {'BUSY', what, n} (nothing changed; what: reservations queued claimed
--            transfers failed-stream sold)
--       'unmark'               drops 'archived' (a later bucket refused: the sale goes on
--                              as it was) -> 1 dropped, 0 there was none
--       'drop'                 UNLINKs keys 2..11 of an archived bucket
--         -> the number of keys removed, or -1 when the bucket is not archived
local mode = ARGV[1]
if mode == 'mark' then
  local was = redis.call('HGET', KEYS[1], 'archived')
  if was then
    return {'ARCHIVED', was}
  end
  local busy = {
    {'reservations', redis.call('ZCARD', KEYS[5])},
    {'queued', redis.call('SCARD', KEYS[6])},
    {'claimed', redis.call('SCARD', KEYS[7])},
    {'transfers', redis.call('HLEN', KEYS[9])},
    {'failed-stream', redis.call('XLEN', KEYS[8])},
  }
  for _, b in ipairs(busy) do
    if b[2] > 0 then
      return {'BUSY', b[1], b[2]}
    end
  end
  local sold = redis.call('HGET', KEYS[1], 'sold')
  if ARGV[3] ~= '' and sold and sold ~= ARGV[3] then
    return {'BUSY', 'sold', tonumber(sold)}
  end
  -- The stock key goes with the rest: reads of an archived sale take what it held here.
  redis.call('HSET', KEYS[1], 'archived', ARGV[2], 'stockLeft', redis.call('GET', KEYS[2]) or '0')
  return {'OK', ARGV[2]}
elseif mode == 'unmark' then
  return redis.call('HDEL', KEYS[1], 'archived')
elseif mode == 'drop' then
  if redis.call('HEXISTS', KEYS[1], 'archived') == 0 then
    return -1
  end
  return redis.call('UNLINK', KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10],
    KEYS[11])
end
return redis.error_reply('archive.lua: unknown mode ' .. tostring(mode))
