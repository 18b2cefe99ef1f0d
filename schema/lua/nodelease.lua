-- Order-number node leases, in one hash: field <id> = "<token>:<expiry ms>" of the
-- gateway holding node id <id>, by Redis's clock. A lease not renewed by its expiry is
-- free, so the id of a gateway that died comes free by itself, and two live gateways
-- never hold the same id.
--   KEYS: 1 the leases (hash)  2 the counter where the search for a free id starts
--   acquire  ARGV "acquire", TOKEN, TTL_MS, NODES
--            -> the id taken (the first free one from the counter on, so that restarts
--               spread over the ids), or -1 when all NODES ids are held
--   renew    ARGV "renew", TOKEN, TTL_MS, ID
--            -> 1 held (also when it had expired and nobody took it since), 0 another
--               gateway holds it now, or Redis lost it (no field: a failover or a restart
--               that lost the write): another gateway may have taken the id meanwhile,
--               so its holder must take a new one, not write this one back
--   release  ARGV "release", TOKEN, ID -> 1 released, 0 it was not ours
--   live     ARGV "live" -> the ids whose lease has not expired (the reaper's view)
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local mode = ARGV[1]

local function holder(id)
  local v = redis.call('HGET', KEYS[1], id)
  if not v then
    return nil
  end
  local colon = string.find(v, ':', 1, true)
  if tonumber(string.sub(v, colon + 1)) <= now then
    return nil
  end
  return string.sub(v, 1, colon - 1)
end

if mode == 'acquire' then
  local token, ttl, nodes = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
  local start = redis.call('INCR', KEYS[2])
  for i = 0, nodes - 1 do
    local id = (start + i) % nodes
    if not holder(id) then
      redis.call('HSET', KEYS[1], id, token .. ':' .. (now + ttl))
      return id
    end
  end
  return -1
elseif mode == 'renew' then
  local token, ttl, id = ARGV[2], tonumber(ARGV[3]), ARGV[4]
  local v = redis.call('HGET', KEYS[1], id)
  if not v or string.sub(v, 1, #token + 1) ~= token .. ':' then
    return 0
  end
  redis.call('HSET', KEYS[1], id, token .. ':' .. (now + ttl))
  return 1
elseif mode == 'release' then
  if holder(ARGV[3]) == ARGV[2] then
    redis.call('HDEL', KEYS[1], ARGV[3])
    return 1
  end
  return 0
elseif mode == 'live' then
  local live = {}
  local all = redis.call('HGETALL', KEYS[1])
  for i = 1, #all, 2 do
    local colon = string.find(all[i + 1], ':', 1, true)
    if tonumber(string.sub(all[i + 1], colon + 1)) > now then
      live[#live + 1] = tonumber(all[i])
    else
      -- Expired: nobody renews it any more, so it goes (acquire would overwrite it).
      redis.call('HDEL', KEYS[1], all[i])
    end
  end
  return live
end
return redis.error_reply('nodelease.lua: unknown mode ' .. tostring(mode))
