-- claimRetries: claims due retries under a visibility lease.
--
-- KEYS[1]  retry schedule zset (keys.retries()): member = webhook id, score = due time (ms)
-- ARGV[1]  now (ms): entries with score <= now are due
-- ARGV[2]  limit: most entries to claim
-- ARGV[3]  leaseDueAt (ms, computed by the caller as now + lease): claimed entries move there
-- ARGV[4]  retry data key prefix (keys.retryData('')); the data key of id is prefix .. id
--
-- Returns a flat array id1, data1, leaseDueAt1, id2, ... in due order (leaseDueAt echoes ARGV[3], a string).
--
-- Claimed entries stay scheduled (re-scored to leaseDueAt), so a claimer that dies before
-- ackRetries loses nothing: they come due again when the lease passes. The script is atomic,
-- so two claimers never get the same id. An entry whose data key has expired is dropped
-- and does not count towards the limit. Data keys are derived from the ids here: on a Redis
-- Cluster the schedule and the data keys share the {retries} tag (clusterKeys), so one slot.

local now, limit, lease, prefix = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]
-- A lease that does not leave the due range would be picked again by a second pass.
local lease_leaves_range = tonumber(lease) > tonumber(now)
local out = {}
local got = 0

while got < limit do
  local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, limit - got)
  local dropped = 0
  for _, id in ipairs(ids) do
    local data = redis.call('GET', prefix .. id)
    if data then
      redis.call('ZADD', KEYS[1], lease, id)
      out[#out + 1] = id
      out[#out + 1] = data
      out[#out + 1] = lease
      got = got + 1
    else
      redis.call('ZREM', KEYS[1], id)
      dropped = dropped + 1
    end
  end
  -- Without drops the range held fewer than asked, or we have them all.
  if dropped == 0 or not lease_leaves_range then break end
end

return out
