-- indexWebhook: on a Redis Cluster, brings a webhook's listing-index entries (config, endpoint,
-- state) in step with a status written or restored. On one Redis writeStatuses.lua and
-- indexStatus-3.lua keep them with the status; on a cluster the status is its webhook's slot
-- and the indexes their config's, so they follow in calls of their own, sent with the status
-- writes. Last write wins as for the status: the config's record of each webhook's indexed
-- stamp and state (KEYS[3]) orders the calls, whatever order they land in, and a stale write
-- (older than the record) moves nothing.
--
-- KEYS[1]  config index (keys.webhookIndex(config))
-- KEYS[2]  endpoint index (keys.webhookEndpointIndex(config, endpoint_hash))
-- KEYS[3]  index record (keys.webhookIndexRecord(config)): hash, webhook id -> '<stamp> <state>'
-- ARGV[1]  webhook id (the member; ULIDs, so lexicographic order is time order)
-- ARGV[2]  the status's updated_at_ns (decimal text, no leading zeros)
-- ARGV[3]  its state
-- ARGV[4]  state-index prefix (keys.webhookStateIndex(config, ''): a key of the config's slot)
-- ARGV[5]  trim floor: members lexicographically below it are older than status_ttl and dropped
--          (and their records with them)
-- ARGV[6]  TTL (ms) of the record hash, renewed with every write
--
-- Returns 1 when the entries were added or moved, 0 when a newer or equal stamp is recorded.

--#include stamps
local is_newer = stamps({}, {}).is_newer

local id, stamp, state, prefix, floor = ARGV[1], ARGV[2], ARGV[3], ARGV[4], '(' .. ARGV[5]
local cur = redis.call('HGET', KEYS[3], id)
local ts, was
if cur then ts, was = string.match(cur, '^(%S+) (.*)$') end
if ts and not is_newer(stamp, ts) then return 0 end
redis.call('HSET', KEYS[3], id, stamp .. ' ' .. state)
redis.call('PEXPIRE', KEYS[3], ARGV[6])
if was ~= state then
  if was then redis.call('ZREM', prefix .. was, id) end
  redis.call('ZADD', prefix .. state, 0, id)
  redis.call('ZREMRANGEBYLEX', prefix .. state, '-', floor)
end
if not cur then
  -- First time indexed: the config and endpoint indexes. The webhooks the config index trims
  -- leave the record too (in slices that stay within Lua's stack).
  local old = redis.call('ZRANGEBYLEX', KEYS[1], '-', floor)
  for s = 1, #old, 500 do redis.call('HDEL', KEYS[3], unpack(old, s, math.min(s + 499, #old))) end
  for i = 1, 2 do
    redis.call('ZADD', KEYS[i], 0, id)
    redis.call('ZREMRANGEBYLEX', KEYS[i], '-', floor)
  end
end
return 1
