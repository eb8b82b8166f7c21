-- dropLegacyRetries: removes entries of the pre-shard schedule that were copied into their
-- shards (workers/redis/retry-drain.ts), only where the entry still has the due time read
-- before the copy (one re-scheduled or leased meanwhile by a process not yet upgraded stays,
-- and is copied by a later drain).
--
-- KEYS[1]  the pre-shard schedule zset (keys.retries())
-- ARGV[1]  its data key prefix (keys.retryData('')) to delete with each entry, or '' to keep
--          the data (on one Redis a shard's data key is the very key the entry used)
-- ARGV[2], ARGV[3], ...  pairs: id, due time as read (ms)
--
-- Returns the number of entries removed.

local prefix = ARGV[1]
local removed = 0
for i = 2, #ARGV, 2 do
  local score = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if score and tonumber(score) == tonumber(ARGV[i + 1]) then
    redis.call('ZREM', KEYS[1], ARGV[i])
    if prefix ~= '' then redis.call('DEL', prefix .. ARGV[i]) end
    removed = removed + 1
  end
end
return removed
