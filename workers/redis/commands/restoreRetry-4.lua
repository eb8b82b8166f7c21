-- restoreRetry: schedules a webhook's retry in its shard unless it is scheduled there already
-- (a live schedule, or a scheduler's lease, is never replaced or doubled). A rebuild runs it
-- after the status was written (restoreStatus-1.lua; together in restoreState-5.lua on one
-- Redis); the drain of the pre-shard schedule (workers/redis/retry-drain.ts) runs it alone.
--
-- KEYS[1]  retry shard zset (keys.retryShard(shard))
-- KEYS[2]  retry data key (keys.shardRetryData(shard, id))
-- KEYS[3]  the config's queue in the shard (keys.shardConfigRetries(shard, config))
-- KEYS[4]  the shard's configs (keys.shardConfigs(shard)); on a cluster all four carry the shard's tag
-- ARGV[1]  webhook id (the zset member)
-- ARGV[2]  retry due time (ms)
-- ARGV[3]  retry data (the encoded webhook)
-- ARGV[4]  retry data TTL (ms)
-- ARGV[5]  config id (the member of KEYS[4])
--
-- Returns 1 when scheduled, 0 when it was scheduled already.

if redis.call('ZADD', KEYS[1], 'NX', ARGV[2], ARGV[1]) == 1 then
  redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[4])
  redis.call('ZADD', KEYS[3], ARGV[2], ARGV[1])
  redis.call('ZADD', KEYS[4], 'LT', ARGV[2], ARGV[5])
  return 1
end
return 0
