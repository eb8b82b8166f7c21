-- completeDelivery: attempts finished. For each, in order: feeds the attempt's latency and
-- outcome to the endpoint's (and host's) adaptive limit, ends the in-flight leases its
-- admission took (ZREM of its webhook id: a lease already gone, expired or ended twice,
-- changes nothing) and records the outcome in the circuit (mirrors
-- core/policy/adaptive-limit.ts and core/policy/circuit.ts). One call carries every
-- completion a worker has at once.
-- KEYS: seven per completion i (b = 7*i):
--   KEYS[b+1] circuit:{hash}   KEYS[b+2] inflight:{hash} (zset)   KEYS[b+3] domain_inflight:{host} (zset)
--   KEYS[b+4] endpoint_errors:{hash}   KEYS[b+5] limit:{hash}   KEYS[b+6] domain_limit:{host}
--   KEYS[b+7] endpoint_latency:{hash}
-- ARGV[1] circuit enabled 1|0   ARGV[2] failure_threshold   ARGV[3] failure_window ms
-- ARGV[4] recovery_timeout ms   ARGV[5] probe_interval ms   ARGV[6] success_threshold
-- ARGV[7] circuit TTL ms (also of the limit state and the latency samples)
-- ARGV[8] initial limit   ARGV[9] floor   ARGV[10] tolerance   ARGV[11] slow threshold ms
-- ARGV[12] window ms   ARGV[13] endpoint limit ceiling   ARGV[14] latency samples kept
-- then twelve per completion i (a = 14 + 12*i): ARGV[a+1] now ms
--   ARGV[a+2] outcome ('success'|'failure'|'neutral')   ARGV[a+3] probe 1|0
--   ARGV[a+4] counted endpoint 1|0   ARGV[a+5] counted domain 1|0
--   ARGV[a+6] error text ('' = none)   ARGV[a+7] now as ISO text
--   ARGV[a+8] latency ms ('' = no sample)   ARGV[a+9] drop 1|0   ARGV[a+10] timeout 1|0
--   ARGV[a+11] domain limit ceiling   ARGV[a+12] webhook id (the leases' member)
-- A sample moves the endpoint's limit only when the attempt was counted (the limit is on),
-- and the host's when it was counted there; `inflight` is the leases in force before this
-- one ends.
-- Returns, per completion in order, the circuit state after it ('CLOSED' | 'OPEN' | 'HALF_OPEN'),
-- or, when this completion moved the circuit (opened it, re-opened it after a failed probe, or
-- closed it after the probes), {state, open_until, opened_count}: the transitions the caller
-- records on howk.guards (only these: nothing more per delivery on the happy path).
--#include adaptiveLimit
local L = adaptiveLimit({}, {ARGV[8], ARGV[9], ARGV[10], ARGV[11], ARGV[12]})
local ceiling = tonumber(ARGV[13])
local samples_kept = tonumber(ARGV[14])
local circuit_on = ARGV[1] == '1'
local failure_threshold = tonumber(ARGV[2])
local failure_window = tonumber(ARGV[3])
local recovery_timeout = tonumber(ARGV[4])
local probe_interval = tonumber(ARGV[5])
local success_threshold = tonumber(ARGV[6])
local ttl = ARGV[7]

-- One call often carries many completions of the same endpoint: each limit state is read
-- once, updated in order in memory and written once at the end, and the latency samples of a
-- key are pushed together (the same values and order as one write per completion).
local states, state_order, samples, sample_order = {}, {}, {}, {}

local function learn(k_state, k_leases, ceil, ms, drop, timeout, now)
  local inflight = redis.call('ZCOUNT', k_leases, '(' .. string.format('%.17g', now), '+inf')
  local e = states[k_state]
  if not e then
    e = {s = L.load(k_state, ceil)}
    states[k_state] = e
    state_order[#state_order + 1] = k_state
  end
  e.s = L.next(e.s, ms, drop, timeout, inflight, now, ceil)
end

local function sample(key, value)
  local list = samples[key]
  if not list then
    list = {}
    samples[key] = list
    sample_order[#sample_order + 1] = key
  end
  list[#list + 1] = value
end

local function complete(b, a)
  local k_circuit, k_conc, k_domain, k_errors = KEYS[b + 1], KEYS[b + 2], KEYS[b + 3], KEYS[b + 4]
  local now = tonumber(ARGV[a + 1])
  local outcome, is_probe = ARGV[a + 2], ARGV[a + 3] == '1'
  if ARGV[a + 8] ~= '' then
    local ms, drop, timeout = tonumber(ARGV[a + 8]), ARGV[a + 9] == '1', ARGV[a + 10] == '1'
    if ARGV[a + 4] == '1' then
      learn(KEYS[b + 5], k_conc, ceiling, ms, drop, timeout, now)
      if not drop or timeout then
        sample(KEYS[b + 7], now .. ':' .. ARGV[a + 8])
      end
    end
    if ARGV[a + 5] == '1' then learn(KEYS[b + 6], k_domain, tonumber(ARGV[a + 11]), ms, drop, timeout, now) end
  end
  if ARGV[a + 4] == '1' then redis.call('ZREM', k_conc, ARGV[a + 12]) end
  if ARGV[a + 5] == '1' then redis.call('ZREM', k_domain, ARGV[a + 12]) end

  if ARGV[a + 6] ~= '' then
    redis.call('LPUSH', k_errors, cjson.encode({at = ARGV[a + 7], error = ARGV[a + 6]}))
    redis.call('LTRIM', k_errors, 0, 9)
    redis.call('PEXPIRE', k_errors, ttl)
  end

  if not circuit_on then return 'CLOSED' end
  local c = redis.call('HMGET', k_circuit, 'state', 'failures', 'window_start', 'successes')
  local state = c[1] or 'CLOSED'
  if outcome == 'neutral' then return state end

  if state == 'CLOSED' then
    if outcome == 'success' then
      if tonumber(c[2] or '0') > 0 then redis.call('HSET', k_circuit, 'failures', 0) end
      return state
    end
    local failures = tonumber(c[2] or '0')
    local window_start = tonumber(c[3] or '0')
    if now - window_start > failure_window then
      window_start = now
      failures = 0
    end
    failures = failures + 1
    if failures >= failure_threshold then
      redis.call('HSET', k_circuit, 'state', 'OPEN', 'failures', failures, 'window_start', window_start, 'open_until', now + recovery_timeout)
      local opened = redis.call('HINCRBY', k_circuit, 'opened_count', 1)
      redis.call('PEXPIRE', k_circuit, ttl)
      return {'OPEN', tostring(now + recovery_timeout), opened}
    end
    redis.call('HSET', k_circuit, 'state', 'CLOSED', 'failures', failures, 'window_start', window_start)
    redis.call('PEXPIRE', k_circuit, ttl)
    return state
  end

  -- A late answer of a non-probe attempt sent before the circuit opened says nothing new.
  if state == 'OPEN' or not is_probe then return state end
  if outcome == 'failure' then
    redis.call('HSET', k_circuit, 'state', 'OPEN', 'open_until', now + probe_interval, 'successes', 0)
    redis.call('PEXPIRE', k_circuit, ttl)
    return {'OPEN', tostring(now + probe_interval), tonumber(redis.call('HGET', k_circuit, 'opened_count') or '0')}
  end
  local successes = tonumber(c[4] or '0') + 1
  if successes >= success_threshold then
    local opened = redis.call('HGET', k_circuit, 'opened_count')
    redis.call('DEL', k_circuit)
    if opened then redis.call('HSET', k_circuit, 'state', 'CLOSED', 'opened_count', opened) redis.call('PEXPIRE', k_circuit, ttl) end
    return {'CLOSED', '0', tonumber(opened or '0')}
  end
  -- The next probe may go at once: the endpoint answered.
  redis.call('HSET', k_circuit, 'successes', successes, 'probe_at', 0)
  return 'HALF_OPEN'
end

local out = {}
for i = 0, #KEYS / 7 - 1 do out[i + 1] = complete(7 * i, 14 + 12 * i) end
for _, key in ipairs(state_order) do L.save(key, states[key].s, ttl) end
for _, key in ipairs(sample_order) do
  local list = samples[key]
  local from = math.max(1, #list - samples_kept + 1)
  redis.call('LPUSH', key, unpack(list, from, #list))
  redis.call('LTRIM', key, 0, samples_kept - 1)
  redis.call('PEXPIRE', key, ttl)
end
return out
