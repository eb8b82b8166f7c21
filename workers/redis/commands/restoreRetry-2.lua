-- restoreRetry: schedules a replayed webhook's retry unless it is scheduled already (a live
-- schedule, or a scheduler's lease, is never replaced or doubled). Run after its status was
-- written (restoreStatus-1.lua; together in restoreState-3.lua on one Redis).
--
-- KEYS[1]  retry schedule zset (keys.retries())
-- KEYS[2]  retry data key (keys.retryData(id)); on a cluster both carry the {retries} tag
-- ARGV[1]  webhook id (the zset member)
-- ARGV[2]  retry due time (ms)
-- ARGV[3]  retry data (the encoded webhook)
-- ARGV[4]  retry data TTL (ms)
--
-- Returns 1 when scheduled, 0 when it was scheduled already.

if redis.call('ZADD', KEYS[1], 'NX', ARGV[2], ARGV[1]) == 1 then
  redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[4])
  return 1
end
return 0
