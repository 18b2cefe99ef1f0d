-- Edits a warmed sale (seckillctl activity update), on one bucket, in one atomic step whose
-- guards read Redis's own clock: every gateway's execute.lua sees the old sale or the new
-- one, never half of each. Every value is a target, not a change, so a call repeated
-- after a lost answer, or made again to finish an interrupted edit, lands the same.
-- KEYS: 1 activity  2 stock  3 users  4 orders
-- ARGV: 1 name ('' keeps it)  2 start ms ('' keeps it)  3 end ms ('' keeps it)
--       4 the sale's stock ('' keeps it)  5 'carry' on the bucket whose stock key takes
--       the change of stock (bucket 0), 'describe' on the others (their hash alone)
--       6 the per-user limit ('' keeps it)
-- A lower per-user limit is taken only while the bucket holds no order: a user holding
-- more slots than the new limit allows would be over it.
-- The stock key moves by (new stock - the hash's 'stock'): units added are on sale at
-- once; units taken back must be unsold and unreserved, i.e. in the stock key.
-- Returns {'OK', units added (< 0: taken back), stock key after} or one refusal, nothing
-- changed: {'MISSING'} not warmed, {'ARCHIVED'}, {'CANCELLED'}, {'STARTED', start} a new
-- start for a sale under way, {'ENDED', end}, {'PAST', now} a start or end not after now,
-- {'WINDOW'} an end not after the start, {'SHORT', left} fewer units left than asked
-- back, {'NOKEY'} a stock change while the stock key is missing (warmup rebuilds it),
-- {'ORDERED'} a lower per-user limit on a bucket that holds orders.
local meta = redis.call('HMGET', KEYS[1], 'start', 'end', 'status', 'archived', 'stock', 'perUser')
if not meta[1] then
  return {'MISSING'}
end
if meta[4] then
  return {'ARCHIVED'}
end
if meta[3] == 'CANCELLED' then
  return {'CANCELLED'}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local start, finish = tonumber(meta[1]), tonumber(meta[2])
if finish <= now then
  return {'ENDED', meta[2]}
end
local new_start, new_end = start, finish
if ARGV[2] ~= '' then
  new_start = tonumber(ARGV[2])
  if new_start ~= start and start <= now then
    return {'STARTED', meta[1]}
  end
  if new_start ~= start and new_start <= now then
    return {'PAST', tostring(now)}
  end
end
if ARGV[3] ~= '' then
  new_end = tonumber(ARGV[3])
  if new_end ~= finish and new_end <= now then
    return {'PAST', tostring(now)}
  end
end
if new_end <= new_start then
  return {'WINDOW'}
end
-- A caller of before the limit (five arguments) keeps it.
local per_user = ARGV[6] or ''
if per_user ~= '' and tonumber(per_user) < tonumber(meta[6] or '1') and
    (redis.call('HLEN', KEYS[3]) > 0 or redis.call('HLEN', KEYS[4]) > 0) then
  return {'ORDERED'}
end
local delta = 0
local left = tonumber(redis.call('GET', KEYS[2]) or '-1')
if ARGV[4] ~= '' and ARGV[5] == 'carry' then
  delta = tonumber(ARGV[4]) - tonumber(meta[5] or ARGV[4])
  if delta ~= 0 and left < 0 then
    return {'NOKEY'}
  end
  if delta < 0 and left < -delta then
    return {'SHORT', tostring(left)}
  end
end
if delta ~= 0 then
  left = redis.call('INCRBY', KEYS[2], delta)
end
local fields = {}
if ARGV[1] ~= '' then
  fields[#fields + 1] = 'name'
  fields[#fields + 1] = ARGV[1]
end
if ARGV[2] ~= '' then
  fields[#fields + 1] = 'start'
  fields[#fields + 1] = ARGV[2]
end
if ARGV[3] ~= '' then
  fields[#fields + 1] = 'end'
  fields[#fields + 1] = ARGV[3]
end
if ARGV[4] ~= '' then
  fields[#fields + 1] = 'stock'
  fields[#fields + 1] = ARGV[4]
end
if per_user ~= '' then
  fields[#fields + 1] = 'perUser'
  fields[#fields + 1] = per_user
end
-- The hash's status follows the window (warmup writes it from MySQL the same way).
fields[#fields + 1] = 'status'
fields[#fields + 1] = new_start > now and 'PENDING' or 'ACTIVE'
redis.call('HSET', KEYS[1], unpack(fields))
return {'OK', delta, left}
