-- dropHeld: remove the first n webhooks a drain produced; the pause ends when a drain empties
-- the queue. Only the drain that owns the scope drops: another one's batch is not ours.
-- KEYS[1] paused:{kind}:{id}   KEYS[2] paused_queue:{kind}:{id}
-- ARGV[1] drain id   ARGV[2] n
-- Returns how many webhooks remain held, -1 when the drain does not own the scope (nothing dropped).
local v = redis.call('GET', KEYS[1])
local state, owner = string.match(v or '', '^(%a+):([^:]+):%d+$')
if owner ~= ARGV[1] then return -1 end
redis.call('LTRIM', KEYS[2], tonumber(ARGV[2]), -1)
local left = redis.call('LLEN', KEYS[2])
if left == 0 and state == 'draining' then redis.call('DEL', KEYS[1]) end
return left
