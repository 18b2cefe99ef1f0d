-- Order-number node leases. A gateway holds node id N while the key PREFIX..N holds its
-- token; the key expires unless renewed, so the id of a gateway that died comes free by
-- itself, and two live gateways never hold the same id.
--   acquire  KEYS[1] the counter; ARGV "acquire", PREFIX, TOKEN, TTL_MS, NODES
--            -> the id taken (the first free one from the counter on, so that restarts
--               spread over the ids), or -1 when all NODES ids are held
--   renew    KEYS[1] the lease; ARGV "renew", TOKEN, TTL_MS
--            -> 1 held (also when it had expired and nobody took it since), 0 another
--               gateway holds it now
--   release  KEYS[1] the lease; ARGV "release", TOKEN -> 1 released, 0 it was not ours
local mode = ARGV[1]
if mode == 'acquire' then
  local prefix, token, ttl, nodes = ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
  local start = redis.call('INCR', KEYS[1])
  for i = 0, nodes - 1 do
    local id = (start + i) % nodes
    if redis.call('SET', prefix .. id, token, 'NX', 'PX', ttl) then
      return id
    end
  end
  return -1
elseif mode == 'renew' then
  local holder = redis.call('GET', KEYS[1])
  if holder == ARGV[2] then
    redis.call('PEXPIRE', KEYS[1], ARGV[3])
    return 1
  end
  if not holder then
    redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
    return 1
  end
  return 0
elseif mode == 'release' then
  if redis.call('GET', KEYS[1]) == ARGV[2] then
    redis.call('DEL', KEYS[1])
    return 1
  end
  return 0
end
return redis.error_reply('nodelease.lua: unknown mode ' .. tostring(mode))
