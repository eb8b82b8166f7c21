-- indexStatus: keeps a webhook's listing-index entries in step with its stored status.
-- Runs right after restoreState in the same pipeline (a rebuild); it reads what is stored,
-- so whatever order concurrent writes land in, the index ends up matching the status.
-- writeStatuses.lua applies the same rule to the live writes, batched.
--
-- KEYS[1]  status hash (keys.status(id)): reads `data`; keeps `ix` (the state index the
--          webhook is in) and `ixp` (its config's state-index prefix)
-- KEYS[2]  config index (keys.webhookIndex(config)), or '' when the writer does not know
--          the config (a patch of a held webhook)
-- KEYS[3]  endpoint index (keys.webhookEndpointIndex(config, endpoint_hash)), or ''
-- ARGV[1]  webhook id (the member; ids are ULIDs, so lexicographic order is time order)
-- ARGV[2]  state-index prefix (keys.webhookStateIndex(config, '')), or '' to use the stored `ixp`
-- ARGV[3]  trim floor: members lexicographically below it are older than status_ttl and dropped
--
-- Returns 1 when an entry was added or moved, 0 otherwise (also when no status is stored,
-- or it names no state). Index keys are derived here (prefix .. state). One Redis only: on a
-- Redis Cluster the status and the config's indexes are two slots, and no index is kept.

local got = redis.call('HMGET', KEYS[1], 'data', 'ix', 'ixp')
if not got[1] then return 0 end
local ok, decoded = pcall(cjson.decode, got[1])
if not ok or type(decoded) ~= 'table' or type(decoded.state) ~= 'string' then return 0 end
local cur, ixp = got[2] or nil, got[3] or nil

local prefix = ARGV[2]
if prefix == '' then
  prefix = ixp
  if not prefix then return 0 end
elseif ixp ~= prefix then
  redis.call('HSET', KEYS[1], 'ixp', prefix)
end

local id, floor = ARGV[1], '(' .. ARGV[3]
local want = prefix .. decoded.state
local changed = 0
if cur ~= want then
  if cur then redis.call('ZREM', cur, id) end
  redis.call('ZADD', want, 0, id)
  redis.call('ZREMRANGEBYLEX', want, '-', floor)
  redis.call('HSET', KEYS[1], 'ix', want)
  changed = 1
end
-- First time indexed (or again after a Redis loss): the config and endpoint indexes.
if not cur and KEYS[2] ~= '' then
  for i = 2, 3 do
    redis.call('ZADD', KEYS[i], 0, id)
    redis.call('ZREMRANGEBYLEX', KEYS[i], '-', floor)
  end
  changed = 1
end
return changed
