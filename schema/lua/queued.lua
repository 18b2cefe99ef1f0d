-- Marks reservations whose order Kafka has acknowledged: they leave the resv zset, so
-- the reaper no longer sees them however long the consumer lags.
-- KEYS: 1 resv  2 queued      ARGV: "orderNo|userId" ...
-- Returns how many were still reservations (a consumer may have claimed the rest first).
local marked = 0
for _, member in ipairs(ARGV) do
  if redis.call('ZREM', KEYS[1], member) == 1 then
    redis.call('SADD', KEYS[2], member)
    marked = marked + 1
  end
end
return marked
