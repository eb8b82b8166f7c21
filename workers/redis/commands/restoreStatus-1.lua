-- restoreStatus: writes one replayed status (last-write-wins). restoreState-5.lua runs it with
-- the retry on one Redis; on a Redis Cluster the retry is another slot's (restoreRetry-4.lua).
--
-- KEYS[1]  status hash (keys.status(id)): fields `data`, `ts`, `hs` (writeStatuses.lua: the
--          ts this layout last wrote; kept '-' on a status that may have an old history list)
-- ARGV[1]  WebhookStatus JSON
-- ARGV[2]  its updated_at_ns (decimal text, no leading zeros)
-- ARGV[3]  status TTL (ms)
--
-- Returns 1 when the status was written, 0 when a status as new or newer is stored: the
-- live system wrote it after the replayed record, so it owns the webhook and its schedule.

--#include stamps
local is_newer = stamps({}, {}).is_newer

local cur = redis.call('HMGET', KEYS[1], 'ts', 'hs')
local ts, hs = cur[1] or nil, cur[2] or nil
if not is_newer(ARGV[2], ts) then return 0 end
redis.call('HSET', KEYS[1], 'data', ARGV[1], 'ts', ARGV[2], 'hs', (ts and hs ~= ts) and '-' or ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
