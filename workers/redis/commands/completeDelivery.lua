-- completeDelivery: attempts finished. For each, in order: feeds the attempt's latency and
-- outcome to the endpoint's (and host's) adaptive limit, ends the in-flight leases its
-- admission took (ZREM of its webhook id: a lease already gone, expired or ended twice,
-- changes nothing) and records the outcome in the circuit (mirrors
-- core/policy/adaptive-limit.ts and core/policy/circuit.ts). One call carries every
-- completion a worker has at once.
-- The keys are built here from the prefixes given (core/domain/keys.ts), and each distinct
-- endpoint and host of the call is sent once: a completion names its endpoint by index, so
-- the arguments stay small when many share one. On one Redis a call spans endpoints and
-- hosts; on a Redis Cluster it carries one endpoint slot's completions, ids sent as hash tags.
-- KEYS: none on one Redis; on a cluster KEYS[1], a key of the call's slot (the call is routed
--   by it, and Redis refuses a key of another slot). The keys come from the arguments below.
-- ARGV[1] circuit enabled 1|0   ARGV[2] failure_threshold   ARGV[3] failure_window ms
-- ARGV[4] recovery_timeout ms   ARGV[5] probe_interval ms   ARGV[6] success_threshold
-- ARGV[7] circuit TTL ms (also of the limit state and the latency samples)
-- ARGV[8] initial limit   ARGV[9] floor   ARGV[10] tolerance   ARGV[11] slow threshold ms
-- ARGV[12] window ms   ARGV[13] endpoint limit ceiling   ARGV[14] latency samples kept
-- ARGV[15..21] key prefixes: circuit:  inflight: (zset)  domain_inflight: (zset)
--   endpoint_errors:  limit:  domain_limit:  endpoint_latency:
-- then E, the number of endpoints, and two per endpoint: its hash, its host's number (1..H)
-- then H, the number of hosts, and two per host: the host, its domain limit ceiling
-- (an endpoint or host may come twice, e.g. with another ceiling: the keys are the same)
-- then a marks section (includes/sentMarks.lua): M, the number of sent marks riding this call
--   (0 on a cluster), and when M > 0 the status key prefix, its TTL ms and two per mark
--   (webhook id, mark); they are written first (workers/redis/riding-marks.ts)
-- then seven per completion: endpoint number (1..E), now ms ('' = the previous
--   completion's; the first one gives it), flags (the sum of: 1 probe, 2 counted endpoint,
--   4 counted domain, 8 drop, 16 timeout, and the outcome: 0 success, 32 failure,
--   64 neutral), error text ('' = none), now as ISO text (only with an error text, else ''),
--   latency ms ('' = no sample), webhook id (the leases' member)
-- A sample moves the endpoint's limit only when the attempt was counted (the limit is on),
-- and the host's when it was counted there; `inflight` is the leases in force before this
-- one ends.
-- TTL: a limit hash (endpoint and host) is given ARGV[7] when it is written and its field
-- `ttl_at` (Redis's TIME, ms, when that was last done) is missing or at least ARGV[7] / 16 old,
-- not at each write; the endpoint's latency samples list gets it at the same time as its limit
-- hash (samples are pushed only with a write of it), and when a push created it. So neither
-- expires while completions keep coming, and an idle one is gone between 15/16 of ARGV[7] and
-- ARGV[7] after its last write.
-- Returns {codes, then three per transition}: codes has one letter per completion in order, the
-- circuit state after it (C CLOSED, O OPEN, H HALF_OPEN), or T when this completion moved the
-- circuit (opened it, re-opened it after a failed probe, or closed it after the probes): its
-- state, open_until and opened_count follow in the reply, one triple per T in order. The
-- transitions are what the caller records on howk.guards (nothing more per delivery on the
-- happy path); one string rather than a reply per completion keeps the reply small.
--#include adaptiveLimit
--#include places
--#include sentMarks
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
local OUTCOMES = {[0] = 'success', [32] = 'failure', [64] = 'neutral'}
-- The key prefixes (ARGV[15..21]).
local P = {}
for k = 1, 7 do P[k] = ARGV[14 + k] end

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

local function learn(k_state, k_leases, ceil, ms, drop, timeout, now, now_text, k_samples)
  local inflight_now = inflight(k_leases, now, now_text)
  local e = states[k_state]
  if not e then
    local s, ttl_at = L.load(k_state, ceil, 'ttl_at')
    e = {s = s, ttl_at = ttl_at and ttl_at + 0, samples = k_samples}
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

-- LPUSH of the last `keep` values in order (the only ones LTRIM keeps), LTRIM, and the TTL:
-- always, or with `created_only` only on a list the LPUSH created.
local function flush(lists, order, keep, created_only)
  local last = tostring(keep - 1)
  for _, key in ipairs(order) do
    local list = lists[key]
    local from = math.max(1, #list - keep + 1)
    local len = redis.call('LPUSH', key, unpack(list, from, #list))
    redis.call('LTRIM', key, '0', last)
    if not created_only or len == #list - from + 1 then redis.call('PEXPIRE', key, ttl) end
  end
end

-- Redis's clock (ms), read once per call: the limit hashes' `ttl_at`.
local clock
local function server_ms()
  if not clock then
    local t = redis.call('TIME')
    clock = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return clock
end

-- Each limit state written once, its TTL (and its samples list's) renewed when due (see the
-- header).
local function save_states()
  local every = math.floor(tonumber(ttl) / 16)
  for _, key in ipairs(state_order) do
    local e = states[key]
    local t = server_ms()
    if not e.ttl_at or t - e.ttl_at >= every or t < e.ttl_at then
      L.save(key, e.s, 'ttl_at', t)
      redis.call('PEXPIRE', key, ttl)
      if e.samples then redis.call('PEXPIRE', e.samples, ttl) end
    else
      L.save(key, e.s)
    end
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

local function complete(e, now, now_text, flags, err, at, sample_ms, id)
  local k_circuit, k_conc, k_domain = e.circuit, e.inflight, e.host.inflight
  local is_probe = bit.band(flags, 1) ~= 0
  local on_ep, on_dom = bit.band(flags, 2) ~= 0, bit.band(flags, 4) ~= 0
  local outcome = OUTCOMES[bit.band(flags, 96)]
  if sample_ms ~= '' then
    local ms, drop, timeout = sample_ms + 0, bit.band(flags, 8) ~= 0, bit.band(flags, 16) ~= 0
    if on_ep then
      learn(e.limit, k_conc, ceiling, ms, drop, timeout, now, now_text, e.latency)
      if not drop or timeout then
        push(samples, sample_order, e.latency, sample_time(now, now_text) .. ':' .. sample_ms)
      end
    end
    if on_dom then learn(e.host.limit, k_domain, e.host.max, ms, drop, timeout, now, now_text) end
  end
  if on_ep then end_lease(k_conc, id) end
  if on_dom then end_lease(k_domain, id) end

  if err ~= '' then push(errors, error_order, P[4] .. e.hash, cjson.encode({at = at, error = err})) end

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

-- The endpoints and hosts of the call, their keys made once each.
local eps, a = places({}, ARGV)(22, function(hash)
  return {hash = hash, circuit = P[1] .. hash, inflight = P[2] .. hash, limit = P[5] .. hash, latency = P[7] .. hash}
end, P[3], P[6])
-- The sent marks riding this call.
a = sentMarks({}, ARGV)(a)

-- The completions are read from ARGV where they are (no table per completion: less for the
-- Lua garbage collector), and their numbers with `+ 0` (the same conversion as tonumber, for
-- text known to be a number, without a function call and its second parse).
local last = #ARGV - 6

-- The leases this call ends, with their scores as it begins (one ZMSCORE per zset).
for r0 = a, last, 7 do
  local f = ARGV[r0 + 2] + 0
  if bit.band(f, 2) ~= 0 then watch(eps[ARGV[r0] + 0].inflight, ARGV[r0 + 6]) end
  if bit.band(f, 4) ~= 0 then watch(eps[ARGV[r0] + 0].host.inflight, ARGV[r0 + 6]) end
end
for _, key in ipairs(set_order) do
  local z = sets[key]
  for from = 1, z.gone and #z.ids or 0, 1000 do
    local to = math.min(#z.ids, from + 999)
    local scores = redis.call('ZMSCORE', key, unpack(z.ids, from, to))
    for j = from, to do
      if z.score[z.ids[j]] == nil then z.score[z.ids[j]] = scores[j - from + 1] and scores[j - from + 1] + 0 or false end
    end
  end
end

-- The reply: one code per completion (see the header), then the transitions' triples.
local CODES = {CLOSED = 'C', OPEN = 'O', HALF_OPEN = 'H'}
local codes, out = {}, {''}
local now, now_text
for r0 = a, last, 7 do
  local t = ARGV[r0 + 1]
  if t ~= '' then now, now_text = t + 0, t end
  local r = complete(eps[ARGV[r0] + 0], now, now_text, ARGV[r0 + 2] + 0, ARGV[r0 + 3], ARGV[r0 + 4], ARGV[r0 + 5], ARGV[r0 + 6])
  if type(r) == 'table' then
    codes[#codes + 1] = 'T'
    out[#out + 1], out[#out + 2], out[#out + 3] = r[1], r[2], r[3]
  else
    codes[#codes + 1] = CODES[r]
  end
end
out[1] = table.concat(codes)
for _, key in ipairs(set_order) do
  local gone = sets[key].gone or sets[key].ids
  for from = 1, #gone, 1000 do redis.call('ZREM', key, unpack(gone, from, math.min(#gone, from + 999))) end
end
save_states()
flush(samples, sample_order, samples_kept, true)
flush(errors, error_order, 10)
return out
