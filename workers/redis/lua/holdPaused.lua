-- holdPaused: queue a webhook behind a pause, only while the pause (or its drain) lasts.
-- KEYS[1] paused:{kind}:{id}   KEYS[2] paused_queue:{kind}:{id}
-- ARGV[1] the encoded webhook
-- Returns 1 when held, 0 when the scope is no longer paused (deliver it normally).
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('RPUSH', KEYS[2], ARGV[1])
return 1
