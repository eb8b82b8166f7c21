-- holdPaused: queue a webhook behind a pause, only while the pause (or its drain) lasts.
-- A webhook the current drain released (its id among ARGV[2]) passes: held again it would
-- go round the drain forever.
-- KEYS[1] paused:{kind}:{id}   KEYS[2] paused_queue:{kind}:{id}
-- ARGV[1] the encoded webhook   ARGV[2] ids of the drains that released it, comma-separated ('' none)
-- Returns 1 when held, 0 when the scope is no longer paused (deliver it normally), 2 when the
-- scope's drain released it (deliver it past this pause).
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local state, owner = string.match(v, '^(%a+):([^:]+):%d+$')
if state == 'draining' and ARGV[2] ~= '' and string.find(',' .. ARGV[2] .. ',', ',' .. owner .. ',', 1, true) then return 2 end
redis.call('RPUSH', KEYS[2], ARGV[1])
return 1
