-- completeDelivery: an attempt finished. Lowers the in-flight counters it raised (never
-- below 0) and records the outcome in the circuit (mirrors core/policy/circuit.ts).
-- KEYS[1] circuit:{hash}   KEYS[2] concurrency:{hash}   KEYS[3] domain_concurrency:{host}
-- KEYS[4] endpoint_errors:{hash}
-- ARGV[1] now ms   ARGV[2] outcome ('success'|'failure'|'neutral')   ARGV[3] probe 1|0
-- ARGV[4] counted endpoint 1|0   ARGV[5] counted domain 1|0   ARGV[6] circuit enabled 1|0
-- ARGV[7] failure_threshold   ARGV[8] failure_window ms   ARGV[9] recovery_timeout ms
-- ARGV[10] probe_interval ms   ARGV[11] success_threshold   ARGV[12] circuit TTL ms
-- ARGV[13] error text ('' = none)   ARGV[14] now as ISO text
-- Returns the circuit state after the update ('CLOSED' | 'OPEN' | 'HALF_OPEN').
local now = tonumber(ARGV[1])

local function floor_decr(key)
  local v = tonumber(redis.call('GET', key) or '0')
  if v > 0 then redis.call('DECR', key) end
end
if ARGV[4] == '1' then floor_decr(KEYS[2]) end
if ARGV[5] == '1' then floor_decr(KEYS[3]) end

if ARGV[13] ~= '' then
  redis.call('LPUSH', KEYS[4], cjson.encode({at = ARGV[14], error = ARGV[13]}))
  redis.call('LTRIM', KEYS[4], 0, 9)
  redis.call('PEXPIRE', KEYS[4], ARGV[12])
end

if ARGV[6] ~= '1' then return 'CLOSED' end
local outcome = ARGV[2]
local c = redis.call('HMGET', KEYS[1], 'state', 'failures', 'window_start', 'successes')
local state = c[1] or 'CLOSED'
if outcome == 'neutral' then return state end

if state == 'CLOSED' then
  if outcome == 'success' then
    if tonumber(c[2] or '0') > 0 then redis.call('HSET', KEYS[1], 'failures', 0) end
    return state
  end
  local failures = tonumber(c[2] or '0')
  local window_start = tonumber(c[3] or '0')
  if now - window_start > tonumber(ARGV[8]) then
    window_start = now
    failures = 0
  end
  failures = failures + 1
  if failures >= tonumber(ARGV[7]) then
    redis.call('HSET', KEYS[1], 'state', 'OPEN', 'failures', failures, 'window_start', window_start, 'open_until', now + tonumber(ARGV[9]))
    redis.call('HINCRBY', KEYS[1], 'opened_count', 1)
    state = 'OPEN'
  else
    redis.call('HSET', KEYS[1], 'state', 'CLOSED', 'failures', failures, 'window_start', window_start)
  end
  redis.call('PEXPIRE', KEYS[1], ARGV[12])
  return state
end

-- A late answer of a non-probe attempt sent before the circuit opened says nothing new.
if state == 'OPEN' or ARGV[3] ~= '1' then return state end
if outcome == 'failure' then
  redis.call('HSET', KEYS[1], 'state', 'OPEN', 'open_until', now + tonumber(ARGV[10]), 'successes', 0)
  redis.call('PEXPIRE', KEYS[1], ARGV[12])
  return 'OPEN'
end
local successes = tonumber(c[4] or '0') + 1
if successes >= tonumber(ARGV[11]) then
  local opened = redis.call('HGET', KEYS[1], 'opened_count')
  redis.call('DEL', KEYS[1])
  if opened then redis.call('HSET', KEYS[1], 'state', 'CLOSED', 'opened_count', opened) redis.call('PEXPIRE', KEYS[1], ARGV[12]) end
  return 'CLOSED'
end
-- The next probe may go at once: the endpoint answered.
redis.call('HSET', KEYS[1], 'successes', successes, 'probe_at', 0)
return 'HALF_OPEN'
