-- takeHeld: the next batch of a drain, without removing it (dropHeld does, after the produce).
-- KEYS[1] paused:{kind}:{id}   KEYS[2] paused_queue:{kind}:{id}
-- ARGV[1] drain id   ARGV[2] now ms   ARGV[3] lease ms   ARGV[4] batch size (>= 1)
-- Returns {'lost'} (another drain owns the scope, or it is not paused), {'paused'} (paused
-- again: the lease is given up, the drain stops), {'done'} (nothing held: the pause ends)
-- or {'batch', {webhook, ...}} (the lease is renewed).
local v = redis.call('GET', KEYS[1])
if not v then return {'lost'} end
local state, owner = string.match(v, '^(%a+):([^:]+):%d+$')
if owner ~= ARGV[1] then return {'lost'} end
if state == 'paused' then
  redis.call('SET', KEYS[1], 'paused')
  return {'paused'}
end
local items = redis.call('LRANGE', KEYS[2], 0, tonumber(ARGV[4]) - 1)
if #items == 0 then
  redis.call('DEL', KEYS[1])
  return {'done'}
end
redis.call('SET', KEYS[1], 'draining:' .. owner .. ':' .. (tonumber(ARGV[2]) + tonumber(ARGV[3])))
return {'batch', items}
