-- The whole Redis side of POST /seckill/execute, atomically, in one round trip.
-- KEYS: 1 activity  2 stock  3 users  4 orders  5 resv  6 rl:user  7 rl:ip  8 brush  9 ban
--       10 token (the spent-token key of this request's purchase token)
-- ARGV: 1 userId  2 orderNo  3 now_ms  4 limits on (0/1)  5 per-user limit/min
--       6 per-ip limit/min  7 anti-brush on (0/1)  8 anti-brush threshold/10s  9 ban seconds
--       10 token lifetime in seconds, 0 when purchase tokens are off
-- Returns {status, ...}: {'OK', orderNo, couponId} | {'DUPLICATE', orderNo}
--   | {'RATE_LIMITED', retryAfterSeconds} | {'BLOCKED', retryAfterSeconds}
--   | {'OUT_OF_STOCK'} | {'NOT_STARTED'} | {'ENDED'} | {'CANCELLED'} | {'NOT_FOUND'}
--   | {'TOKEN_USED'}
local meta = redis.call('HMGET', KEYS[1], 'start', 'end', 'status', 'couponId')
if not meta[1] then
  return {'NOT_FOUND'}
end
local now = tonumber(ARGV[3])
if meta[3] == 'CANCELLED' then
  return {'CANCELLED'}
end
if now < tonumber(meta[1]) then
  return {'NOT_STARTED'}
end
if now >= tonumber(meta[2]) then
  return {'ENDED'}
end

local user = ARGV[1]

if ARGV[7] == '1' then
  local banned = redis.call('TTL', KEYS[9])
  if banned > 0 then
    return {'BLOCKED', banned}
  end
  local attempts = redis.call('INCR', KEYS[8])
  if attempts == 1 then
    redis.call('PEXPIRE', KEYS[8], 10000)
  end
  if attempts > tonumber(ARGV[8]) then
    -- The ban replaces the count: once it lifts, the user starts a fresh 10 s window
    -- instead of tripping the threshold again on the first attempt.
    redis.call('SET', KEYS[9], '1', 'EX', ARGV[9])
    redis.call('DEL', KEYS[8])
    return {'BLOCKED', tonumber(ARGV[9])}
  end
end

if ARGV[4] == '1' then
  local limited = {{KEYS[6], tonumber(ARGV[5])}, {KEYS[7], tonumber(ARGV[6])}}
  for _, limit in ipairs(limited) do
    local count = redis.call('INCR', limit[1])
    if count == 1 then
      redis.call('EXPIRE', limit[1], 60)
    end
    if count > limit[2] then
      local ttl = redis.call('TTL', limit[1])
      if ttl < 1 then ttl = 1 end
      return {'RATE_LIMITED', ttl}
    end
  end
end

-- A purchase token buys one attempt: spend it before anything can be sold.
if ARGV[10] ~= '0' then
  if not redis.call('SET', KEYS[10], user, 'NX', 'EX', ARGV[10]) then
    return {'TOKEN_USED'}
  end
end

local existing = redis.call('HGET', KEYS[3], user)
if existing then
  return {'DUPLICATE', existing}
end

local stock = tonumber(redis.call('GET', KEYS[2]) or '0')
if stock <= 0 then
  return {'OUT_OF_STOCK'}
end

local order_no = ARGV[2]
redis.call('DECR', KEYS[2])
redis.call('HSET', KEYS[3], user, order_no)
redis.call('HSET', KEYS[4], order_no, 'PROCESSING')
redis.call('ZADD', KEYS[5], now, order_no .. '|' .. user)
return {'OK', order_no, meta[4] or '0'}
