-- releaseLock: frees the rebuild lock, only for the instance that holds it (a holder
-- that stalled past the TTL must not free a lock another instance has taken since).
--
-- KEYS[1]  the lock (keys.reconcilerLock())
-- ARGV[1]  owner token
--
-- Returns 1 when released, 0 when the lock is gone or held by another instance.

if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
