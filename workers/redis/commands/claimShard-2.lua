-- claimShard: claims due retries of one shard under a visibility lease, shared fairly among
-- the configs with due retries in the shard.
--
-- KEYS[1]  retry shard zset (keys.retryShard(shard)): member = webhook id, score = due time
--          (ms); the truth every other script reads
-- KEYS[2]  the shard's configs (keys.shardConfigs(shard)): member = config id, score = when
--          its queue may next hold a due entry: its earliest due time, or, for a config a
--          claim served a full part, the time of that claim (its turn comes after the others')
-- ARGV[1]  now (ms): entries with score <= now are due
-- ARGV[2]  limit: most entries to claim
-- ARGV[3]  leaseDueAt (ms, computed by the caller as now + lease): claimed entries move there
-- ARGV[4]  retry data key prefix (keys.shardRetryData(shard, '')); the data key of id is prefix .. id
-- ARGV[5]  config queue prefix (scriptPrefix(keys.shardConfigRetries(shard, ''))); the queue
--          of config c is prefix .. '{' .. c .. '}' (config ids hold no braces)
--
-- Returns a flat array id1, data1, leaseDueAt1, id2, ... (leaseDueAt echoes ARGV[3]).
--
-- Fairness: each round gives every config with due retries an equal part of what is left of
-- the limit, earliest due first within a config, so a config with a million due retries takes
-- no more of a pass than any other config with due work. The config queues are an index the
-- writers add to (apply, restore, drain) but only this script cleans: an entry acked, ended or
-- renewed since is found out here against KEYS[1] (gone: dropped; not due: moved to its real
-- due time). Due entries of KEYS[1] no queue knows (none are written so; a safety net) are
-- claimed last with what is left. Claimed entries stay scheduled (re-scored to leaseDueAt), so
-- a claimer that dies before ackRetries loses nothing. An entry whose data has expired is dropped.

local now, limit, lease, prefix, qprefix = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], ARGV[4], ARGV[5]
-- A lease that does not leave the due range would be picked again in the next round.
local leaves = tonumber(lease) > now
local rounds_left = leaves and 64 or 1
-- Bounds the script's time when the queues hold many stale entries; the rest waits a pass.
local budget = limit * 4 + 100
local out = {}
local got = 0

local function claim(id)
  local data = redis.call('GET', prefix .. id)
  if not data then
    redis.call('ZREM', KEYS[1], id)
    return false
  end
  redis.call('ZADD', KEYS[1], lease, id)
  out[#out + 1] = id
  out[#out + 1] = data
  out[#out + 1] = lease
  got = got + 1
  return true
end

-- One config's part: returns whether it may hold more due entries.
local function serve(config, part)
  local q = qprefix .. '{' .. config .. '}'
  local ids = redis.call('ZRANGEBYSCORE', q, '-inf', now, 'LIMIT', 0, part)
  for _, id in ipairs(ids) do
    budget = budget - 1
    local score = redis.call('ZSCORE', KEYS[1], id)
    if not score then
      redis.call('ZREM', q, id)
    elseif tonumber(score) > now then
      redis.call('ZADD', q, score, id)
    elseif claim(id) then
      redis.call('ZADD', q, lease, id)
    else
      redis.call('ZREM', q, id)
    end
  end
  -- A full part: more may be due. The config goes behind the configs not served yet (score
  -- now: still due at the next pass), so configs with due work take turns across passes even
  -- when more of them are due than a pass serves.
  if #ids == part then
    redis.call('ZADD', KEYS[2], now, config)
    return true
  end
  local head = redis.call('ZRANGE', q, 0, 0, 'WITHSCORES')
  if head[2] then redis.call('ZADD', KEYS[2], head[2], config) else redis.call('ZREM', KEYS[2], config) end
  return false
end

local active = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, limit)
while got < limit and #active > 0 and budget > 0 and rounds_left > 0 do
  rounds_left = rounds_left - 1
  local part = math.max(1, math.floor((limit - got) / #active))
  local still = {}
  for _, config in ipairs(active) do
    if got >= limit or budget <= 0 then break end
    if serve(config, math.min(part, limit - got)) then still[#still + 1] = config end
  end
  active = still
end

if got < limit and budget > 0 and leaves then
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, limit - got)) do
    claim(id)
  end
end

return out
