-- dropHeld: remove the first n drained webhooks; the pause ends when a drain empties the queue.
-- KEYS[1] paused:{kind}:{id}   KEYS[2] paused_queue:{kind}:{id}
-- ARGV[1] n
-- Returns how many webhooks remain held.
redis.call('LTRIM', KEYS[2], tonumber(ARGV[1]), -1)
local left = redis.call('LLEN', KEYS[2])
if left == 0 and redis.call('GET', KEYS[1]) == 'draining' then redis.call('DEL', KEYS[1]) end
return left
