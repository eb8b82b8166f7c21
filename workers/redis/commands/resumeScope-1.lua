-- resumeScope: start draining a paused scope. One drain at a time owns the scope (a lease):
-- two drains would produce the same held webhooks twice.
-- KEYS[1] paused:{kind}:{id}   (value 'paused'|'draining', optionally ':<drain id>:<lease until ms>')
-- ARGV[1] drain id (no ':')   ARGV[2] now ms   ARGV[3] lease ms
-- Returns 'drain' (the caller owns the drain), 'running' (another drain holds a live lease and
-- carries on; the scope is draining again) or 'none' (not paused).
local v = redis.call('GET', KEYS[1])
if not v then return 'none' end
local owner, till = string.match(v, '^%a+:([^:]+):(%d+)$')
local now = tonumber(ARGV[2])
if owner and tonumber(till) > now then
  redis.call('SET', KEYS[1], 'draining:' .. owner .. ':' .. till)
  return 'running'
end
redis.call('SET', KEYS[1], 'draining:' .. ARGV[1] .. ':' .. (now + tonumber(ARGV[3])))
return 'drain'
