-- restoreState: writes one replayed status (last-write-wins) and, with it, its retry: the two
-- scripts it includes in one run (a Redis Cluster runs them apart: the keys are two slots').
--
-- KEYS[1]  status hash (keys.status(id)): fields `data`, `ts`, `hs` (writeStatuses.lua: the
--          ts this layout last wrote; kept '-' on a status that may have an old history list)
-- KEYS[2]  retry shard zset (keys.retryShard(shard of id))
-- KEYS[3]  retry data key (keys.shardRetryData(shard, id))
-- KEYS[4]  the config's queue in the shard (keys.shardConfigRetries(shard, config))
-- KEYS[5]  the shard's configs (keys.shardConfigs(shard))
-- ARGV[1]  WebhookStatus JSON
-- ARGV[2]  its updated_at_ns (decimal text, no leading zeros)
-- ARGV[3]  status TTL (ms)
-- ARGV[4]  webhook id (the zset member)
-- ARGV[5]  retry due time (ms), or '' for no retry (a dead webhook)
-- ARGV[6]  retry data (the encoded webhook)
-- ARGV[7]  retry data TTL (ms)
-- ARGV[8]  config id
--
-- Returns 1 when the status was written, 0 when a status as new or newer is stored: the
-- live system wrote it after the replayed record, so it owns the webhook and its schedule,
-- which are left untouched. A written status restores its retry only if the webhook is not
-- scheduled already (a live schedule, or a scheduler's lease, is never replaced or doubled).

--#include restoreStatus
--#include restoreRetry

if restoreStatus({KEYS[1]}, {ARGV[1], ARGV[2], ARGV[3]}) == 0 then return 0 end
if ARGV[5] ~= '' then restoreRetry({KEYS[2], KEYS[3], KEYS[4], KEYS[5]}, {ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8]}) end
return 1
