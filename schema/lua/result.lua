-- A user's order for one activity: {orderNo, status}, or {} when there is none.
-- KEYS: 1 users  2 orders      ARGV: 1 userId
local order_no = redis.call('HGET', KEYS[1], ARGV[1])
if not order_no then
  return {}
end
return {order_no, redis.call('HGET', KEYS[2], order_no) or 'PROCESSING'}
