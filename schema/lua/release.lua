-- Ends reservations that never reached Kafka: the stock goes back, the user is free to
-- try again, the order is FAILED. Only members still in the resv zset are released, so an
-- order that is queued in Kafka or claimed by a consumer can never be released here:
-- confirm and release cannot both win.
-- KEYS: 1 stock  2 users  3 orders  4 resv
-- ARGV: 'order', orderNo, userId        (gateway rollback after a failed delivery)
--    or 'older', cutoff_ms, max_count    (reaper: reservations accepted before cutoff)
-- Returns, for 'older', the number of reservations released; for 'order', 1 when this call
-- released it, 0 when it was already FAILED (or is unknown), 2 when it lives on (queued in
-- Kafka, claimed by a consumer or SUCCESS: a delivery report that said "failed" was wrong).
local members
if ARGV[1] == 'order' then
  members = {ARGV[2] .. '|' .. ARGV[3]}
else
  members = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', '(' .. ARGV[2], 'LIMIT', 0, tonumber(ARGV[3]))
end

local released = 0
for _, member in ipairs(members) do
  if redis.call('ZREM', KEYS[4], member) == 1 then
    local bar = string.find(member, '|', 1, true)
    local order_no = string.sub(member, 1, bar - 1)
    local user = string.sub(member, bar + 1)
    redis.call('INCR', KEYS[1])
    if redis.call('HGET', KEYS[2], user) == order_no then
      redis.call('HDEL', KEYS[2], user)
    end
    redis.call('HSET', KEYS[3], order_no, 'FAILED')
    released = released + 1
  end
end
if ARGV[1] == 'order' and released == 0 then
  local status = redis.call('HGET', KEYS[3], ARGV[2])
  if status and status ~= 'FAILED' then
    return 2
  end
  return 0
end
return released
