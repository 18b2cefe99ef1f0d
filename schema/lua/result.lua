-- A user's order for one activity: {orderNo, status} of the order they hold, else
-- {orderNo, 'FAILED', reason} of their last order that failed and freed them (fail_order,
-- prelude.lua), else {} when there is none.
-- KEYS: 1 users  2 orders  3 failed users      ARGV: 1 userId
local order_no = redis.call('HGET', KEYS[1], ARGV[1])
if order_no then
  return {order_no, redis.call('HGET', KEYS[2], order_no) or 'PROCESSING'}
end
local failed = redis.call('HGET', KEYS[3], ARGV[1])
if not failed then
  return {}
end
local space = string.find(failed, ' ', 1, true)
return {string.sub(failed, 1, space - 1), 'FAILED', string.sub(failed, space + 1)}
