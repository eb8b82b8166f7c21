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
--   ARGV[a+6] error text ('' = none)   ARGV[a+7] now as ISO text (read only with an error text)
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

-- One call often carries many completions of the same endpoint: each key is read once per
-- call and followed in memory (every write the script makes kept in step), and the writes
-- that only add up go at the end, one per key: each limit state is updated in order and
-- written once, the latency samples and the errors of a key are pushed together, the leases
-- of a zset are ended by one ZREM (the same values, order and TTLs as one write per
-- completion).
local states, state_order, samples, sample_order = {}, {}, {}, {}
local errors, error_order = {}, {}

-- The in-flight zsets: the score each lease to end had when the call began (ZMSCORE, false
-- when not there), the scores of those ended so far, and the count in force at the last
-- `now` asked (a ZCOUNT per key and distinct now, less the leases ended in the call). With
-- one lease to end, its own count comes first: no scores needed.
local sets, set_order = {}, {}
local function watch(key, id)
  local z = sets[key]
  if not z then
    sets[key] = {ids = {id}}
    set_order[#set_order + 1] = key
  elseif not z.gone then
    z.ids[2], z.score, z.ended, z.gone = id, {}, {}, {}
  else
    z.ids[#z.ids + 1] = id
  end
end

local function inflight(key, now, now_text)
  local z = sets[key]
  if z.at ~= now then
    -- The text `now` came in is the same double as the number: no formatting needed.
    local n = redis.call('ZCOUNT', key, '(' .. now_text, '+inf')
    if z.ended then
      for _, s in ipairs(z.ended) do
        if s > now then n = n - 1 end
      end
    end
    z.at, z.n = now, n
  end
  return z.n
end

local function end_lease(key, id)
  local z = sets[key]
  -- A zset with one lease to end in the call is asked nothing more after it.
  if not z.gone then return end
  local s = z.score[id]
  if s then
    z.score[id] = false
    z.ended[#z.ended + 1] = s
    z.gone[#z.gone + 1] = id
    if z.at and s > z.at then z.n = z.n - 1 end
  end
end

local function learn(k_state, k_leases, ceil, ms, drop, timeout, now, now_text)
  local inflight_now = inflight(k_leases, now, now_text)
  local e = states[k_state]
  if not e then
    e = {s = L.load(k_state, ceil)}
    states[k_state] = e
    state_order[#state_order + 1] = k_state
  end
  e.s = L.next(e.s, ms, drop, timeout, inflight_now, now, ceil)
end

local function push(lists, order, key, value)
  local list = lists[key]
  if not list then
    list = {}
    lists[key] = list
    order[#order + 1] = key
  end
  list[#list + 1] = value
end

-- LPUSH of the last `keep` values in order (the only ones LTRIM keeps), LTRIM, TTL.
local function flush(lists, order, keep)
  local last = tostring(keep - 1)
  for _, key in ipairs(order) do
    local list = lists[key]
    redis.call('LPUSH', key, unpack(list, math.max(1, #list - keep + 1), #list))
    redis.call('LTRIM', key, '0', last)
    redis.call('PEXPIRE', key, ttl)
  end
end

-- `now` as Lua writes a number (what `now .. ':'` gave): the text it came in when that is
-- up to 14 digits without a leading zero (the same text), else made once per distinct now.
local texts = {}
local function sample_time(now, text)
  if #text <= 14 and string.find(text, '^[1-9]%d*$') then return text end
  local t = texts[now]
  if not t then
    t = tostring(now)
    texts[now] = t
  end
  return t
end

-- A circuit as HMGET gives it: {state, failures, window_start, successes}.
local circuits = {}
local function circuit(key)
  local c = circuits[key]
  if not c then
    c = redis.call('HMGET', key, 'state', 'failures', 'window_start', 'successes')
    c[1] = c[1] or 'CLOSED'
    circuits[key] = c
  end
  return c
end

local function complete(b, a)
  local k_circuit, k_conc, k_domain = KEYS[b + 1], KEYS[b + 2], KEYS[b + 3]
  local now = tonumber(ARGV[a + 1])
  local outcome, is_probe = ARGV[a + 2], ARGV[a + 3] == '1'
  if ARGV[a + 8] ~= '' then
    local ms, drop, timeout = tonumber(ARGV[a + 8]), ARGV[a + 9] == '1', ARGV[a + 10] == '1'
    if ARGV[a + 4] == '1' then
      learn(KEYS[b + 5], k_conc, ceiling, ms, drop, timeout, now, ARGV[a + 1])
      if not drop or timeout then
        push(samples, sample_order, KEYS[b + 7], sample_time(now, ARGV[a + 1]) .. ':' .. ARGV[a + 8])
      end
    end
    if ARGV[a + 5] == '1' then learn(KEYS[b + 6], k_domain, tonumber(ARGV[a + 11]), ms, drop, timeout, now, ARGV[a + 1]) end
  end
  if ARGV[a + 4] == '1' then end_lease(k_conc, ARGV[a + 12]) end
  if ARGV[a + 5] == '1' then end_lease(k_domain, ARGV[a + 12]) end

  if ARGV[a + 6] ~= '' then push(errors, error_order, KEYS[b + 4], cjson.encode({at = ARGV[a + 7], error = ARGV[a + 6]})) end

  if not circuit_on then return 'CLOSED' end
  local c = circuit(k_circuit)
  local state = c[1]
  if outcome == 'neutral' then return state end

  if state == 'CLOSED' then
    if outcome == 'success' then
      if tonumber(c[2] or '0') > 0 then
        redis.call('HSET', k_circuit, 'failures', 0)
        c[2] = 0
      end
      return state
    end
    local failures = tonumber(c[2] or '0')
    local window_start = tonumber(c[3] or '0')
    if now - window_start > failure_window then
      window_start = now
      failures = 0
    end
    failures = failures + 1
    c[2], c[3] = failures, window_start
    if failures >= failure_threshold then
      c[1] = 'OPEN'
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
    c[1], c[4] = 'OPEN', 0
    return {'OPEN', tostring(now + probe_interval), tonumber(redis.call('HGET', k_circuit, 'opened_count') or '0')}
  end
  local successes = tonumber(c[4] or '0') + 1
  if successes >= success_threshold then
    local opened = redis.call('HGET', k_circuit, 'opened_count')
    redis.call('DEL', k_circuit)
    if opened then redis.call('HSET', k_circuit, 'state', 'CLOSED', 'opened_count', opened) redis.call('PEXPIRE', k_circuit, ttl) end
    circuits[k_circuit] = {'CLOSED', false, false, false}
    return {'CLOSED', '0', tonumber(opened or '0')}
  end
  -- The next probe may go at once: the endpoint answered.
  redis.call('HSET', k_circuit, 'successes', successes, 'probe_at', 0)
  c[4] = successes
  return 'HALF_OPEN'
end

-- The leases this call ends, with their scores as it begins (one ZMSCORE per zset).
for i = 0, #KEYS / 7 - 1 do
  local a = 14 + 12 * i
  if ARGV[a + 4] == '1' then watch(KEYS[7 * i + 2], ARGV[a + 12]) end
  if ARGV[a + 5] == '1' then watch(KEYS[7 * i + 3], ARGV[a + 12]) end
end
for _, key in ipairs(set_order) do
  local z = sets[key]
  for from = 1, z.gone and #z.ids or 0, 1000 do
    local to = math.min(#z.ids, from + 999)
    local scores = redis.call('ZMSCORE', key, unpack(z.ids, from, to))
    for j = from, to do
      if z.score[z.ids[j]] == nil then z.score[z.ids[j]] = scores[j - from + 1] and tonumber(scores[j - from + 1]) or false end
    end
  end
end

local out = {}
for i = 0, #KEYS / 7 - 1 do out[i + 1] = complete(7 * i, 14 + 12 * i) end
for _, key in ipairs(set_order) do
  local gone = sets[key].gone or sets[key].ids
  for from = 1, #gone, 1000 do redis.call('ZREM', key, unpack(gone, from, math.min(#gone, from + 999))) end
end
for _, key in ipairs(state_order) do L.save(key, states[key].s, ttl) end
flush(samples, sample_order, samples_kept)
flush(errors, error_order, 10)
return out
