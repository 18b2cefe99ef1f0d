-- Ends reservations that never reached Kafka: the stock goes back, the user is free to
-- try again, the order is FAILED. Only members still in the resv zset are released, so an
-- order that is queued in Kafka or claimed by a consumer can never be released here:
-- confirm and release cannot both win.
-- Each order it fails is added to the failed stream with its reason (ROLLED_BACK for the
-- gateway's rollback, EXPIRED for the reaper), in the same atomic step, so MySQL learns of
-- it (the consumer's outcomes pass) exactly when Redis decided it.
-- KEYS: 1 stock  2 users  3 orders  4 resv  5 failed  6 activity (an archived sale,
--       archive.lua, releases nothing and marks nothing: it returns 0)  7 failed users
-- ARGV: 'order', orderNo, userId        (gateway rollback after a failed delivery)
--    or 'forget', orderNo, userId       (as 'order', for a request whose execute verdict
--                                        was lost: when the order is unknown, its number is
--                                        marked FAILED so that the execute script, if it
--                                        still runs, reserves nothing: execute.lua)
--    or 'older', cutoff_ms, max_count [, 'own', node | , 'except', ',n1,n2,']
--                                        (reaper: reservations accepted before cutoff; with
--                                        'own' only those of that node, with 'except' all
--                                        but those of the listed nodes, the node being the
--                                        one in the order number)
-- In 'order' and 'forget' the reservation is found under whichever slot of the user holds
-- the order (a sale with perUser > 1, execute.lua); the gateway may not know the slot (a
-- lost verdict).
-- Returns, for 'older', the number of reservations released; for 'order', 1 when this call
-- released it, 0 when it was already FAILED (or is unknown), 2 when it lives on (queued in
-- Kafka, claimed by a consumer or SUCCESS: a delivery report that said "failed" was wrong).
-- fail_order, publish_final, reaper_takes, holder_fields: prelude.lua.

local function ours(order_no)
  return ARGV[1] ~= 'older' or reaper_takes(order_no, ARGV[4], ARGV[5])
end

if redis.call('HEXISTS', KEYS[6], 'archived') == 1 then
  return 0
end

local members
local limit
local one_order = ARGV[1] == 'order' or ARGV[1] == 'forget'
if one_order then
  local holder = ARGV[3]
  local slots = tonumber(redis.call('HGET', KEYS[6], 'perUser') or '1') or 1
  if slots > 1 then
    local fields = holder_fields(ARGV[3], slots)
    local held = redis.call('HMGET', KEYS[2], unpack(fields))
    for s = 1, slots do
      if held[s] == ARGV[2] then
        holder = fields[s]
        break
      end
    end
  end
  members = {ARGV[2] .. '|' .. holder}
  limit = 1
else
  limit = tonumber(ARGV[3])
  -- Others' reservations are skipped, so look further than the limit.
  local window = ARGV[4] and limit * 4 or limit
  members = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', '(' .. ARGV[2], 'LIMIT', 0, window)
end

local reason = one_order and 'ROLLED_BACK' or 'EXPIRED'
local t = redis.call('TIME')
local now_ms = tostring(tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))

local released = 0
local failed = {}
for _, member in ipairs(members) do
  local bar = string.find(member, '|', 1, true)
  local order_no = string.sub(member, 1, bar - 1)
  if released < limit and ours(order_no) and redis.call('ZREM', KEYS[4], member) == 1 then
    local user = string.sub(member, bar + 1)
    redis.call('INCR', KEYS[1])
    fail_order(KEYS[2], KEYS[3], KEYS[5], KEYS[7], order_no, user, reason, now_ms)
    released = released + 1
    failed[#failed + 1] = order_no
  end
end
publish_final(KEYS[3], 'FAILED', failed)
if one_order and released == 0 then
  local status = redis.call('HGET', KEYS[3], ARGV[2])
  if status and status ~= 'FAILED' then
    return 2
  end
  if not status and ARGV[1] == 'forget' then
    redis.call('HSET', KEYS[3], ARGV[2], 'FAILED')
  end
  return 0
end
return released
