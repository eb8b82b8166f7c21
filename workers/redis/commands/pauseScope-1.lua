-- pauseScope: pause an endpoint or a config (again). A drain in progress keeps its lease (the
-- value's ':<drain>:<until>' part): it sees the pause at its next step, stops and gives it up.
-- KEYS[1] paused:{kind}:{id}   (value 'paused'|'draining', optionally ':<drain id>:<lease until ms>')
-- Returns 1.
local v = redis.call('GET', KEYS[1])
local lease = v and string.match(v, '^%a+(:[^:]+:%d+)$') or ''
redis.call('SET', KEYS[1], 'paused' .. lease)
return 1
