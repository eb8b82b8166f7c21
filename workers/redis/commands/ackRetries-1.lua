-- ackRetries: removes re-enqueued retries whose lease is still the one we claimed.
--
-- KEYS[1]  retry shard zset (keys.retryShard(shard of the ids))
-- ARGV[1]  retry data key prefix (keys.retryData('')); the data key of id is prefix .. id (the
--          schedule's slot on a cluster: clusterKeys)
-- ARGV[2], ARGV[3], ...  pairs: id, leaseDueAt (ms, as returned by claimShard)
--
-- Returns the number of retries removed.
--
-- An entry re-scheduled after the claim (new score, new data) no longer carries our lease
-- and survives. Scores are integer ms (< 2^53), so comparing them as numbers is exact.

local prefix = ARGV[1]
local removed = 0
for i = 2, #ARGV, 2 do
  local id = ARGV[i]
  local score = redis.call('ZSCORE', KEYS[1], id)
  if score and tonumber(score) == tonumber(ARGV[i + 1]) then
    redis.call('ZREM', KEYS[1], id)
    redis.call('DEL', prefix .. id)
    removed = removed + 1
  end
end
return removed
