-- A user's order for one activity: {orderNo, status} of the order they hold, else
-- {orderNo, 'FAILED', reason} of their last order that failed and freed them (fail_order,
-- prelude.lua), else {} when there is none.
-- A sale with perUser = N > 1 (execute.lua) answers every slot of the user: {orderNo,
-- status, reason} of the newest order they hold (else of their newest failed one; reason
-- '' unless FAILED), then the same three for each of their orders, slot by slot.
-- KEYS: 1 users  2 orders  3 failed users  4 activity      ARGV: 1 userId
local function one(field)
  local order_no = redis.call('HGET', KEYS[1], field)
  if order_no then
    return {order_no, redis.call('HGET', KEYS[2], order_no) or 'PROCESSING', ''}
  end
  local failed = redis.call('HGET', KEYS[3], field)
  if not failed then
    return nil
  end
  local space = string.find(failed, ' ', 1, true)
  return {string.sub(failed, 1, space - 1), 'FAILED', string.sub(failed, space + 1)}
end

local slots = tonumber(redis.call('HGET', KEYS[4], 'perUser') or '1') or 1
if slots <= 1 then
  local order = one(ARGV[1])
  if not order then
    return {}
  end
  if order[2] ~= 'FAILED' then
    order[3] = nil
  end
  return order
end

-- Order numbers of one sale: the larger the id before the '-', the newer the order.
local function newer(a, b)
  local x, y = string.match(a, '^%d+'), string.match(b, '^%d+')
  if #x ~= #y then
    return #x > #y
  end
  return x > y
end

local orders, main = {}, nil
for _, field in ipairs(holder_fields(ARGV[1], slots)) do
  local order = one(field)
  if order then
    orders[#orders + 1] = order
    local held = order[2] ~= 'FAILED'
    local main_held = main and main[2] ~= 'FAILED'
    if not main or (held and not main_held) or (held == main_held and newer(order[1], main[1])) then
      main = order
    end
  end
end
if not main then
  return {}
end
local answer = {main[1], main[2], main[3]}
for _, order in ipairs(orders) do
  answer[#answer + 1] = order[1]
  answer[#answer + 1] = order[2]
  answer[#answer + 1] = order[3]
end
return answer
