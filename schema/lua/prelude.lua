-- What several scripts share. Not a script of its own: the binaries put it before every
-- script of this directory when they load them (src/common/luascript.c), and so do the
-- tests that EVAL one (test/lib/luabody.py).

-- Clients holding a GET ...?wait=N for these orders are woken by one SPUBLISH to
-- seckill:final:{tag} (the orders key's tag: the same slot, so in a Redis Cluster the
-- message stays on this shard): "<STATUS> <orderNo> <orderNo> ...".
local function publish_final(orders_key, status, order_nos)
  if #order_nos > 0 then
    redis.call('SPUBLISH', 'seckill:final:' .. string.match(orders_key, '{[^}]+}'),
      status .. ' ' .. table.concat(order_nos, ' '))
  end
end

-- The order is FAILED, and the failed stream says why in the same atomic step, so that
-- MySQL learns of it (the consumer's outcomes pass) exactly when Redis decided it.
local function record_failed(orders_key, failed_key, order_no, user, reason, now_ms)
  redis.call('HSET', orders_key, order_no, 'FAILED')
  redis.call('XADD', failed_key, '*', 'o', order_no, 'u', user, 'r', reason, 't', now_ms)
end

-- As record_failed, and the user is free to buy again unless their record already names
-- another order. A user freed this way keeps the failed order and its reason in
-- failed_users, so that GET /seckill/result answers FAILED rather than nothing
-- (result.lua), until they hold another order.
local function fail_order(users_key, orders_key, failed_key, failed_users_key, order_no, user, reason, now_ms)
  if redis.call('HGET', users_key, user) == order_no then
    redis.call('HDEL', users_key, user)
    redis.call('HSET', failed_users_key, user, order_no .. ' ' .. reason)
  end
  record_failed(orders_key, failed_key, order_no, user, reason, now_ms)
end

-- The activity (or bucket) hash's 'sold' field counts the orders SUCCESS, so that reading it
-- (the gateway's gauges, seckillctl) is O(1) instead of a walk of the orders hash. Every
-- script that turns an order SUCCESS calls this with the number it turned, in the same
-- atomic step. A hash without the field (a sale warmed before the counter existed, or no
-- sale at all) is left as it is: a counter starting late would be wrong without saying so,
-- and a hash created here would make an unwarmed sale look warmed.
local function count_sold(activity_key, n)
  if n > 0 and redis.call('HEXISTS', activity_key, 'sold') == 1 then
    redis.call('HINCRBY', activity_key, 'sold', n)
  end
end

-- The gateway node in an order number: bits 12..21 of the decimal number (41 bits of
-- time, 10 of node, 12 of sequence), from the digits alone: a Lua number cannot hold 63
-- bits exactly, their remainder by 2^22 can.
local function order_node(order_no)
  local r = 0
  for i = 1, #order_no do
    local d = string.byte(order_no, i) - 48
    if d < 0 or d > 9 then
      break
    end
    r = (r * 10 + d) % 4194304
  end
  return math.floor(r / 4096)
end

-- Whether a reaper that passed mode 'own' with its node, or 'except' with the nodes it
-- must leave alone (",a,b,"), takes the reservation of this order; true without a mode.
local function reaper_takes(order_no, mode, nodes)
  if not mode then
    return true
  end
  local node = order_node(order_no)
  if mode == 'own' then
    return node == tonumber(nodes)
  end
  return not string.find(nodes, ',' .. node .. ',', 1, true)
end

-- A user coupon's next event number (<id>:seq, redeemevent.h): above the last one, and at
-- least the time now, so that numbers keep rising even where Redis lost the field (a
-- record published again from MySQL, whose last applied number is a past time).
local function next_coupon_seq(hash, id, now_ms)
  local last = tonumber(redis.call('HGET', hash, id .. ':seq') or '0')
  local seq = math.max(last + 1, tonumber(now_ms))
  redis.call('HSET', hash, id .. ':seq', seq)
  return seq
end

-- The users hash fields of a user's slots 1..slots in a sale of perUser = slots
-- (include/common/holder.h): the id for slot 1, the id and '#s' for slot s.
local function holder_fields(user, slots)
  local fields = {user}
  for s = 2, slots do
    fields[s] = user .. '#' .. s
  end
  return fields
end
