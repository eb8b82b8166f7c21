-- restoreHeld: a rebuild puts held webhooks back behind their pause, in the order given, after
-- what the queue holds. A record the queue holds already is not added again: two rebuilds (a
-- lock lost to a stall), or a hold written while the rebuild ran, never deliver one twice.
-- KEYS[1] paused:{kind}:{id}   KEYS[2] paused_queue:{kind}:{id}
-- ARGV[1..n] encoded webhooks (as holdPaused queues them)
-- Returns how many were appended, -1 when the scope is not paused (nothing appended: the caller
-- schedules them for delivery instead).
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local have = {}
for _, v in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do have[v] = true end
local n = 0
for i = 1, #ARGV do
  if not have[ARGV[i]] then
    redis.call('RPUSH', KEYS[2], ARGV[i])
    have[ARGV[i]] = true
    n = n + 1
  end
end
return n
