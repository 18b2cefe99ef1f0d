-- Moves stock between the buckets of one activity (docs/protocol.md, "Buckets and
-- rebalance") in three steps, each atomic on one bucket and each safe to repeat, so that
-- gateways may run them at once and a crash between two steps loses and creates nothing:
--   out   on the source: takes up to k units off its stock into a transfer record
--   in    on the destination: adds the units unless that transfer id was received before
--   done  on the source: drops the record, once the destination has it
-- Units between out and done are "in transit": the record says where they go, and any
-- later pass (or seckillctl) finishes the transfer.
--   out   KEYS 1 activity  2 stock  3 xfer-out   ARGV 'out', to bucket, k, source tag
--         -> {id, units} ({} when nothing was taken: no stock, or the sale is cancelled
--            or archived)
--   in    KEYS 1 stock  2 xfer-in                ARGV 'in', id, units
--         -> 1 added now, 0 received before
--   done  KEYS 1 xfer-out                        ARGV 'done', id -> 1 dropped, 0 gone before
--   view  KEYS 1 stock  2 xfer-out               ARGV 'view'
--         -> {stock, id1, "to|units", id2, ...}
local mode = ARGV[1]
if mode == 'out' then
  local meta = redis.call('HMGET', KEYS[1], 'status', 'archived')
  if meta[1] == 'CANCELLED' or meta[2] then
    return {}
  end
  local stock = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
  local take = math.min(tonumber(ARGV[3]), stock)
  if take <= 0 then
    return {}
  end
  redis.call('DECRBY', KEYS[2], take)
  local id = ARGV[4] .. '#' .. redis.call('HINCRBY', KEYS[1], 'xferseq', 1)
  redis.call('HSET', KEYS[3], id, ARGV[2] .. '|' .. take)
  return {id, take}
elseif mode == 'in' then
  if redis.call('SADD', KEYS[2], ARGV[2]) == 1 then
    redis.call('INCRBY', KEYS[1], tonumber(ARGV[3]))
    return 1
  end
  return 0
elseif mode == 'done' then
  return redis.call('HDEL', KEYS[1], ARGV[2])
elseif mode == 'view' then
  local out = {redis.call('GET', KEYS[1]) or '0'}
  local records = redis.call('HGETALL', KEYS[2])
  for i = 1, #records do
    out[#out + 1] = records[i]
  end
  return out
end
return redis.error_reply('rebalance.lua: unknown mode ' .. tostring(mode))
