-- The whole Redis side of POST /seckill/execute, atomically, for one or more requests of
-- one activity: the gateway coalesces the requests that arrive in one pass of its event
-- loop into one call. Each request is handled exactly as if it had been sent alone, in
-- the order given (a user twice in one call: the second is a DUPLICATE of the first).
-- KEYS: 1 activity  2 stock  3 users  4 orders  5 resv, then five per request i = 0..n-1:
--       5+5i+1 rl:user  +2 rl:ip  +3 brush  +4 ban  +5 token (the spent-token key of the
--       request's purchase token)
-- ARGV: 1 limits on (0/1)  2 per-user limit/min  3 per-ip limit/min  4 anti-brush on (0/1)
--       5 anti-brush threshold/10s  6 ban seconds  7 the longest a purchase token lives,
--       in seconds (token-ttl-seconds + 1), 0 when tokens are off; then three per request: 7+3i+1 userId  +2 orderNo  +3 now_ms
-- Returns one verdict per request, in order, each {status, ...}:
--   {'OK', orderNo, couponId, slot} | {'DUPLICATE', orderNo} | {'LIMIT_REACHED', orderNo}
--   | {'RATE_LIMITED', retryAfterSeconds} | {'BLOCKED', retryAfterSeconds}
--   | {'OUT_OF_STOCK', buckets} | {'NOT_STARTED'} | {'ENDED'} | {'CANCELLED'} | {'INACTIVE'} | {'NOT_FOUND'}
--   | {'TOKEN_USED'} | {'WRONG_BUCKET'} | {'GONE'} (the order number is already known)
-- An archived sale (archive.lua: its keys are gone but the activity hash) answers ENDED
-- (CANCELLED when it was cancelled) and writes nothing, not even a rate-limit counter.
-- A bucketed activity (bucket.h) has this script's keys once per bucket; its activity hash
-- names the bucket ('bucket', 'buckets'), and a user whose bucket is another one is refused
-- WRONG_BUCKET (a gateway that does not know the buckets yet): the one-per-user record of
-- a user lives in one bucket only.
-- A sale whose activity hash says perUser = N > 1 lets a user hold N orders, one per slot
-- (include/common/holder.h): the users hash field of slot 1 is the user id, of slot s the
-- id and '#s'; a request takes the first free slot, and is refused LIMIT_REACHED (with the
-- order of the user's first slot) when all N are held. The reservation member names the
-- slot's field. Without perUser (or 1) a user holds one order and a repeat is a DUPLICATE.
local n = (#ARGV - 7) / 3
if n < 1 or n ~= math.floor(n) or #KEYS ~= 5 + 5 * n then
  return redis.error_reply('execute.lua: ' .. #KEYS .. ' keys and ' .. #ARGV .. ' arguments do not describe whole requests')
end

local meta = redis.call('HMGET', KEYS[1], 'start', 'end', 'status', 'couponId', 'bucket', 'buckets', 'paused',
                        'archived', 'perUser')
local buckets = tonumber(meta[6] or '1') or 1
local slots = tonumber(meta[9] or '1') or 1
local bucket = tonumber(meta[5] or '0') or 0

-- bucket.c's bucket_of_user: the digits' polynomial hash mod 65521, mod the bucket count.
local function bucket_of(user)
  local h = 0
  for i = 1, #user do
    local d = string.byte(user, i) - 48
    if d < 0 or d > 9 then
      break
    end
    h = (h * 31 + d) % 65521
  end
  return h % buckets
end
local limits_on = ARGV[1] == '1'
local per_user, per_ip = tonumber(ARGV[2]), tonumber(ARGV[3])
local brush_on = ARGV[4] == '1'
local threshold, ban_seconds = tonumber(ARGV[5]), ARGV[6]
local token_ttl = ARGV[7]

local function one(i)
  if not meta[1] then
    return {'NOT_FOUND'}
  end
  -- An archived sale keeps its activity hashes alone: it is over, whichever bucket the
  -- user's was.
  if meta[8] then
    if meta[3] == 'CANCELLED' then
      return {'CANCELLED'}
    end
    return {'ENDED'}
  end
  local k = 5 + 5 * i
  local user, order_no, now = ARGV[8 + 3 * i], ARGV[9 + 3 * i], tonumber(ARGV[10 + 3 * i])
  if buckets > 1 and bucket_of(user) ~= bucket then
    return {'WRONG_BUCKET'}
  end
  if meta[3] == 'CANCELLED' then
    return {'CANCELLED'}
  end
  -- The sale's coupon is deactivated (seckillctl coupon deactivate): nothing is sold
  -- until it is activated again; the stock stays with the sale.
  if meta[7] == '1' then
    return {'INACTIVE'}
  end
  if now < tonumber(meta[1]) then
    return {'NOT_STARTED'}
  end
  if now >= tonumber(meta[2]) then
    return {'ENDED'}
  end

  if brush_on then
    local banned = redis.call('TTL', KEYS[k + 4])
    if banned > 0 then
      return {'BLOCKED', banned}
    end
    local attempts = redis.call('INCR', KEYS[k + 3])
    if attempts == 1 then
      redis.call('PEXPIRE', KEYS[k + 3], 10000)
    end
    if attempts > threshold then
      -- The ban replaces the count: once it lifts, the user starts a fresh 10 s window
      -- instead of tripping the threshold again on the first attempt.
      redis.call('SET', KEYS[k + 4], '1', 'EX', ban_seconds)
      redis.call('DEL', KEYS[k + 3])
      return {'BLOCKED', tonumber(ban_seconds)}
    end
  end

  if limits_on then
    local limited = {{KEYS[k + 1], per_user}, {KEYS[k + 2], per_ip}}
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
  if token_ttl ~= '0' then
    if not redis.call('SET', KEYS[k + 5], user, 'NX', 'EX', token_ttl) then
      return {'TOKEN_USED'}
    end
  end

  local holder, slot = user, 1
  if slots <= 1 then
    local existing = redis.call('HGET', KEYS[3], user)
    if existing then
      return {'DUPLICATE', existing}
    end
  else
    local fields = holder_fields(user, slots)
    local held = redis.call('HMGET', KEYS[3], unpack(fields))
    slot = nil
    for s = 1, slots do
      if not held[s] then
        slot = s
        break
      end
    end
    if not slot then
      return {'LIMIT_REACHED', held[1]}
    end
    holder = fields[slot]
  end

  local stock = tonumber(redis.call('GET', KEYS[2]) or '0')
  if stock <= 0 then
    -- The bucket count: a gateway that does not know the sale's buckets yet must not
    -- take this bucket's empty stock for the whole sale's.
    return {'OUT_OF_STOCK', buckets}
  end

  -- The number is taken: the gateway lost this call's verdict and has settled the request
  -- since (release.lua 'forget'); this is a late run of the call, which must reserve
  -- nothing. (What it counted before, a rate limit or a spent token, belonged to that
  -- request.)
  if redis.call('HSETNX', KEYS[4], order_no, 'PROCESSING') == 0 then
    return {'GONE'}
  end
  redis.call('DECR', KEYS[2])
  redis.call('HSET', KEYS[3], holder, order_no)
  redis.call('ZADD', KEYS[5], now, order_no .. '|' .. holder)
  return {'OK', order_no, meta[4] or '0', slot}
end

local verdicts = {}
for i = 0, n - 1 do
  verdicts[i + 1] = one(i)
end
return verdicts
