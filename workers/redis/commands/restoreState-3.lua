-- restoreState: writes one replayed status (last-write-wins) and, with it, its retry.
--
-- KEYS[1]  status hash (keys.status(id)): fields `data`, `ts`, `hs` (writeStatuses.lua: the
--          ts this layout last wrote; kept '-' on a status that may have an old history list)
-- KEYS[2]  retry schedule zset (keys.retries())
-- KEYS[3]  retry data key (keys.retryData(id))
-- ARGV[1]  WebhookStatus JSON
-- ARGV[2]  its updated_at_ns (decimal text, no leading zeros)
-- ARGV[3]  status TTL (ms)
-- ARGV[4]  webhook id (the zset member)
-- ARGV[5]  retry due time (ms), or '' for no retry (a dead webhook)
-- ARGV[6]  retry data (the encoded webhook)
-- ARGV[7]  retry data TTL (ms)
--
-- Returns 1 when the status was written, 0 when a status as new or newer is stored: the
-- live system wrote it after the replayed record, so it owns the webhook and its schedule,
-- which are left untouched. A written status restores its retry only if the webhook is not
-- scheduled already (a live schedule, or a scheduler's lease, is never replaced or doubled).

--#include stamps
local is_newer = stamps({}, {}).is_newer

local cur = redis.call('HMGET', KEYS[1], 'ts', 'hs')
local ts, hs = cur[1] or nil, cur[2] or nil
if not is_newer(ARGV[2], ts) then return 0 end
redis.call('HSET', KEYS[1], 'data', ARGV[1], 'ts', ARGV[2], 'hs', (ts and hs ~= ts) and '-' or ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
if ARGV[5] ~= '' and redis.call('ZADD', KEYS[2], 'NX', ARGV[5], ARGV[4]) == 1 then
  redis.call('SET', KEYS[3], ARGV[6], 'PX', ARGV[7])
end
return 1
