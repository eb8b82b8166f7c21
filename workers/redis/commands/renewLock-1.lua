-- renewLock: extends the rebuild lock, only for the instance that holds it.
--
-- KEYS[1]  the lock (keys.reconcilerLock())
-- ARGV[1]  owner token (the value it was taken with)
-- ARGV[2]  new TTL (ms)
--
-- Returns 1 when renewed, 0 when the lock is gone or held by another instance.

if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
