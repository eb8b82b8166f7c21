-- addRetry: schedules a webhook's retry in its shard (data, its config's queue and place among
-- the shard's configs, then the schedule entry), unless the shard holds a retry of a later pass
-- of that webhook. A copy of a pass that was made already (consumed again by another worker
-- after a rebalance, its lease or park written late by an outage) must not take the place of
-- the retry that pass's outcome scheduled: claimed, it would come back as the made pass, which
-- the worker that made it skips as known, and the webhook would have nothing scheduled
-- (docs/RELIABILITY.md, "Redis unreachable").
--
-- KEYS[1]  retry shard zset (keys.retryShard(shard of id))
-- KEYS[2]  retry data key (keys.shardRetryData(shard, id))
-- KEYS[3]  the config's queue in the shard (keys.shardConfigRetries(shard, config))
-- KEYS[4]  the shard's configs (keys.shardConfigs(shard)); on a cluster all four carry the shard's tag
-- ARGV[1]  webhook id (the zset member)
-- ARGV[2]  due time (ms)
-- ARGV[3]  data (the encoded webhook: core/records/webhook.ts encodeWebhook)
-- ARGV[4]  data TTL (ms)
-- ARGV[5]  config id (the member of KEYS[4])
--
-- Returns 1 when written, 0 when a later pass is scheduled (nothing written).

-- A webhook's pass (attempt + deferrals) from the fields the encoder writes before the payload
-- (the same reading as core/domain/retry-shards.ts passOfRetry); -1 when unreadable.
local function passOf(data)
  -- The first match is the encoder's own field (a payload comes after it), and deferrals, when
  -- written, follow max_attempts at once.
  local _, last, a = string.find(data, ',"attempt":(%d+),"max_attempts":%d+')
  if not a then return -1 end
  local d = string.match(data, '^,"deferrals":(%d+),"created_at":', last + 1)
  return tonumber(a) + (tonumber(d) or 0)
end

if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  local old = redis.call('GET', KEYS[2])
  if old and passOf(old) > passOf(ARGV[3]) then return 0 end
end
redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[4])
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[1])
redis.call('ZADD', KEYS[4], 'LT', ARGV[2], ARGV[5])
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
return 1
