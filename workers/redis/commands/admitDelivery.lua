-- admitDelivery: may these webhooks be delivered now? For each request, in order: pause,
-- circuit, rate limit, then the domain and endpoint adaptive limits with the lane rule,
-- decided and counted atomically (mirrors core/memory/guards.ts, core/policy/circuit.ts and
-- core/policy/adaptive-limit.ts). One call carries every admission a worker asks for at
-- once: one round trip and one script run for all of them.
-- In flight is a zset of leases per endpoint and per host (member: webhook id, score: when
-- the lease runs out, ms): expired leases (a worker killed before its completion) are
-- dropped before counting, so a leaked count ends on its own however busy the endpoint is.
-- The keys are built here from the prefixes given (core/domain/keys.ts), and each distinct
-- endpoint, host and config of the call is sent once: a request names them by index, so the
-- arguments stay small when many requests share an endpoint. On one Redis a call spans
-- endpoints, hosts and configs; on a Redis Cluster it carries one endpoint slot's requests,
-- with the ids sent as hash tags ({hash}: the keys built land in that slot), no canary, and
-- every request passing the config pause (read before: workers/redis/guard-cluster.ts).
-- KEYS: none on one Redis; on a cluster KEYS[1], a key of the call's slot (the call is routed
--   by it, and Redis refuses a key of another slot). The keys come from the arguments below.
-- ARGV[1] circuit enabled (1|0)   ARGV[2] probe_interval ms   ARGV[3] circuit state TTL ms
-- ARGV[4] rate per s (0 = off)   ARGV[5] burst   ARGV[6] endpoint fast-lane share (0 = off)
-- ARGV[7] in-flight lease ms (a lease taken now runs out at now + this; also the zset's TTL)
-- ARGV[8] initial limit   ARGV[9] floor   ARGV[10] tolerance   ARGV[11] slow threshold ms
-- ARGV[12] window ms   ARGV[13] endpoint limit ceiling
-- ARGV[14] the canary key (howk:system:initialized), or '' when not required. When given and
--   absent, Redis was lost and is not rebuilt yet (no pause or circuit to read): every request
--   gets {'rebuilding'} and nothing is written.
-- ARGV[15..23] key prefixes: paused:endpoint:  paused:config:  circuit:  rate:
--   domain_inflight: (zset)  inflight: (zset)  limit:  domain_limit:  endpoint_queued:
-- then E, the number of endpoints, and two per endpoint: its hash, its host's number (1..H)
-- then H, the number of hosts, and two per host: the host, its domain limit ceiling (0 = off)
-- then C, the number of configs, and one per config: its id
-- then five per request: endpoint number (1..E), config number (1..C),
--   now ms ('' = the previous request's; the first one gives it), webhook id (its lease and
--   queue member), flags (the sum of: 1 waited before, 2 slow lane (else fast),
--   4 passes the endpoint pause, 8 passes the config pause: a webhook its drain released;
--   16 a copy another worker may still be sending: while its id holds a lease in force in
--   the endpoint's (else the host's) in-flight set it is answered 'elsewhere';
--   32 times the endpoint's own ceiling, 0 = none: its in-flight deliveries in either lane
--   never above it, and the limit answered never above it either)
-- Returns one answer per request, in request order, all in one flat list (an answer's kind,
-- then its fields: the kind gives how many), each one of:
--   'rebuilding' | 'paused', scope | 'park', reason, until | 'divert', reason | 'recovered' | 'wait'
--   | 'elsewhere', until (when the lease its id holds runs out, ms)
--   | 'go', probe 0|1, counted_endpoint 0|1, counted_domain 0|1, fast-lane limit (0 = off),
--      limit, latency estimate ms (both as text)
--   (counted_*: a lease was taken in inflight / domain_inflight)
-- A fast-lane 'wait' puts the webhook in endpoint_queued (score: now) until a later request
-- of it that waited gets another answer.
--#include adaptiveLimit
--#include places
local L = adaptiveLimit({}, {ARGV[8], ARGV[9], ARGV[10], ARGV[11], ARGV[12]})
local circuit_on = ARGV[1] == '1'
local probe_interval = tonumber(ARGV[2])
local circuit_ttl = ARGV[3]
local rate = tonumber(ARGV[4])
local burst = tonumber(ARGV[5])
local endpoint_max = tonumber(ARGV[6])
local lease_ms = tonumber(ARGV[7])
local ceiling = tonumber(ARGV[13])

-- A call often carries many requests of one endpoint: each key is read once per call and
-- then followed in memory, every write the script makes kept in step, so each request sees
-- what the ones before it did, as if it read the key again.

-- Limit states and pauses are only read here. Numbers given to redis.call are turned into
-- text each time: the arguments given more than once are passed as the text they came in.
local loaded = {}
local function load(key, ceil)
  local by_ceil = loaded[key]
  if not by_ceil then
    by_ceil = {}
    loaded[key] = by_ceil
  end
  local s = by_ceil[ceil]
  if not s then
    s = L.load(key, ceil)
    by_ceil[ceil] = s
  end
  return s
end

-- Both pause keys of a request in one EXISTS while neither is known (almost always
-- neither is set); one by one only when one is.
local pauses = {}
local function is_paused(key)
  local p = pauses[key]
  if p == nil then
    p = redis.call('EXISTS', key) == 1
    pauses[key] = p
  end
  return p
end

-- A nil key: the request passes that pause.
local function paused(k_ep, k_cfg)
  if not (k_ep and k_cfg) then
    if k_ep and is_paused(k_ep) then return 'endpoint' end
    if k_cfg and is_paused(k_cfg) then return 'config' end
    return nil
  end
  if pauses[k_ep] == nil and pauses[k_cfg] == nil and redis.call('EXISTS', k_ep, k_cfg) == 0 then
    pauses[k_ep], pauses[k_cfg] = false, false
    return nil
  end
  if is_paused(k_ep) then return 'endpoint' end
  if is_paused(k_cfg) then return 'config' end
  return nil
end

-- A circuit as HMGET gives it: {state, open_until, probe_at}.
local circuits = {}
local function circuit(key)
  local c = circuits[key]
  if not c then
    c = redis.call('HMGET', key, 'state', 'open_until', 'probe_at')
    c[1], c[2], c[3] = c[1] or 'CLOSED', c[2] or '0', c[3] or '0'
    circuits[key] = c
  end
  return c
end

-- Rate buckets: taken in memory, each written once at the end (its last tokens and time,
-- and the TTL when a token was taken), which leaves the hash as a write per request would.
local buckets, bucket_order = {}, {}
local function take_token(key, now)
  local b = buckets[key]
  if not b then
    local v = redis.call('HMGET', key, 'tokens', 'at')
    b = {tokens = tonumber(v[1] or burst), at = tonumber(v[2] or now), took = false}
    buckets[key] = b
    bucket_order[#bucket_order + 1] = key
  end
  local tokens = math.min(burst, b.tokens + math.max(0, now - b.at) / 1000 * rate)
  b.at = now
  if tokens < 1 then
    b.tokens = tokens
    return false, tokens
  end
  b.tokens = tokens - 1
  b.took = true
  return true
end

-- In-flight leases per zset: the count in force, the latest now it was pruned at, and
-- (once a later now asks) a lower bound of the earliest lease's end. Expired leases are
-- dropped (ZREMRANGEBYSCORE) again only when a request's now reaches that bound: below it
-- there is nothing to drop. A lease is still one ZADD, whose reply says whether it is new
-- (a webhook whose lease is already in the set is not counted twice).
local sets, leased = {}, {}
local function earliest(key)
  local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  return first[2] and tonumber(first[2]) or math.huge
end

local function inflight(key, now, now_text)
  local z = sets[key]
  if not z then
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now_text)
    z = {n = redis.call('ZCARD', key), upto = now}
    sets[key] = z
  elseif now > z.upto then
    if not z.low then z.low = earliest(key) end
    if now >= z.low then
      z.n = z.n - redis.call('ZREMRANGEBYSCORE', key, '-inf', now_text)
      z.low = earliest(key)
    end
    z.upto = now
  end
  return z.n
end

-- A lease's end as text (the same double Redis would make of the number), once per distinct now.
local ends = {}
local function lease_end(now)
  local e = ends[now]
  if not e then
    local t = now + lease_ms
    -- An integral score is written as one (the same double, and much cheaper to make).
    e = (t == math.floor(t) and math.abs(t) < 2 ^ 53) and string.format('%d', t) or string.format('%.17g', t)
    ends[now] = e
  end
  return e
end

-- A webhook that already holds a lease in the set is a copy of a delivery counted there: the
-- same webhook consumed again by its partition's next owner once its worker died (the rebalance
-- that moved the partition is the proof that copy is gone). It takes that lease over (its
-- ZADD below moves the end and counts nothing) instead of waiting for it to run out. Asked
-- only at a full limit, where it would otherwise wait.
local function holds(key, id)
  return redis.call('ZSCORE', key, id) ~= false
end

local function lease(key, now, now_text, id)
  -- The slow lane takes leases without counting first: expired ones must not pile up.
  inflight(key, now, now_text)
  local z = sets[key]
  z.n = z.n + redis.call('ZADD', key, lease_end(now), id)
  if z.low and now + lease_ms < z.low then z.low = now + lease_ms end
  -- Every lease in the set ends within lease_ms: the TTL (set once, at the end) only
  -- matters once it goes idle.
  if not z.leased then
    z.leased = true
    leased[#leased + 1] = key
  end
end

-- The fast lane's queue (endpoint_queued), per key: each member's last move in the call
-- (a score: queued; false: gone), applied at the end. That is the set and TTL the moves
-- one by one leave: the TTL is renewed when any was queued.
local queues, queue_order = {}, {}
local function queue(key, id, score)
  local q = queues[key]
  if not q then
    q = {last = {}, order = {}, added = false}
    queues[key] = q
    queue_order[#queue_order + 1] = key
  end
  if q.last[id] == nil then q.order[#q.order + 1] = id end
  q.last[id] = score
  if score then q.added = true end
end

-- One command for many members, in slices that stay within Lua's stack.
local function bulk(cmd, key, args, step)
  for from = 1, #args, 1000 * step do
    redis.call(cmd, key, unpack(args, from, math.min(#args, from + 1000 * step - 1)))
  end
end

-- The reply: each request's answer, flat (no table per request), its kind first; each kind
-- has a fixed length (see the header).
local out, o = {}, 0
local LENGTH = {go = 7, park = 3, divert = 2, paused = 2, recovered = 1, wait = 1, rebuilding = 1, elsewhere = 2}
local function reply(kind, x1, x2, x3, x4, x5, x6)
  local n = LENGTH[kind]
  out[o + 1] = kind
  if n > 1 then out[o + 2] = x1 end
  if n > 2 then out[o + 3] = x2 end
  if n > 3 then out[o + 4], out[o + 5], out[o + 6], out[o + 7] = x3, x4, x5, x6 end
  o = o + n
  return kind
end

-- When the lease `id` holds in `key` runs out, while it is in force (its worker renews it as
-- long as the delivery runs; a killed worker's runs out on its own).
local function held_until(key, id, now)
  if not key then return nil end
  local until_ = redis.call('ZSCORE', key, id)
  if until_ and tonumber(until_) > now then return until_ end
  return nil
end

local function admit(e, k_cfg, pass_ep, now, now_text, lane, id, cap, copy)
  local scope = paused(not pass_ep and e.pause or nil, k_cfg)
  if scope then return reply('paused', scope) end

  -- A copy of a delivery another worker still has on its way: not sent beside it. Its caller
  -- asks again once the lease is gone (the delivery ended, or its worker died) and first
  -- looks up whether that delivery was answered.
  if copy then
    local until_ = held_until(e.inflight, id, now) or (e.host.max > 0 and held_until(e.host.inflight, id, now))
    if until_ then return reply('elsewhere', until_) end
  end

  local probe = 0
  if circuit_on then
    local k_circuit = e.circuit
    local c = circuit(k_circuit)
    if c[1] == 'OPEN' then
      local open_until = tonumber(c[2])
      if now < open_until then return reply('park', 'circuit_open', tostring(open_until)) end
      redis.call('HSET', k_circuit, 'state', 'HALF_OPEN', 'successes', 0, 'probe_at', now)
      redis.call('PEXPIRE', k_circuit, circuit_ttl)
      c[1], c[3] = 'HALF_OPEN', now
      probe = 1
    elseif c[1] == 'HALF_OPEN' then
      local next_probe = tonumber(c[3]) + probe_interval
      if now < next_probe then return reply('park', 'circuit_open', tostring(next_probe)) end
      redis.call('HSET', k_circuit, 'probe_at', now)
      c[3] = now
      probe = 1
    end
  end

  if rate > 0 then
    local ok, tokens = take_token(e.rate, now)
    if not ok then return reply('park', 'rate_limited', tostring(now + math.ceil((1 - tokens) / rate * 1000))) end
  end

  -- Without an endpoint limit nothing is measured: the endpoint never counts as slow.
  local ep = nil
  local slow = false
  if endpoint_max > 0 then
    ep = load(e.limit, ceiling)
    slow = L.slowness(ep, now)
  end

  -- The lane rule (laneDecision): at a limit, a slow endpoint goes to the slow lane and a
  -- fast one waits its turn; the slow lane waits at a full host.
  local h = e.host
  local k_domain, k_conc, domain_max = h.inflight, e.inflight, h.max
  if domain_max > 0 then
    local allowed = math.min(L.allowed(load(h.limit, domain_max)), domain_max)
    if inflight(k_domain, now, now_text) >= allowed and not holds(k_domain, id) then
      if lane == 'fast' and slow then return reply('divert', 'domain_inflight') end
      return reply('wait')
    end
  end

  local fast_limit = 0
  if ep then
    fast_limit = math.min(L.allowed(ep), endpoint_max)
    if cap > 0 then fast_limit = math.min(fast_limit, cap) end
    if lane == 'slow' then
      if not slow then return reply('recovered') end
      -- The slow lane counts nothing else: only the endpoint's own ceiling stops it.
      if cap > 0 and inflight(k_conc, now, now_text) >= cap and not holds(k_conc, id) then return reply('wait') end
    elseif inflight(k_conc, now, now_text) >= fast_limit and not holds(k_conc, id) then
      if slow then return reply('divert', 'endpoint_inflight') end
      return reply('wait')
    end
  end

  if domain_max > 0 then lease(k_domain, now, now_text, id) end
  if ep then
    lease(k_conc, now, now_text, id)
    -- The state is not written here: its text is made once per call.
    if not ep.text then ep.text = {string.format('%.17g', ep.limit), string.format('%.17g', ep.lat)} end
    local limit_text = (cap > 0 and ep.limit > cap) and tostring(cap) or ep.text[1]
    return reply('go', probe, 1, domain_max > 0 and 1 or 0, fast_limit, limit_text, ep.text[2])
  end
  return reply('go', probe, 0, domain_max > 0 and 1 or 0, 0, '0', '0')
end

-- The endpoints, hosts and configs of the call, their keys made once each.
local P = {}
for k = 1, 9 do P[k] = ARGV[14 + k] end
local eps, a = places({}, ARGV)(24, function(hash)
  local e = {pause = P[1] .. hash, queued = P[9] .. hash}
  -- Only the keys the guards that are on will read.
  if circuit_on then e.circuit = P[3] .. hash end
  if rate > 0 then e.rate = P[4] .. hash end
  if endpoint_max > 0 then e.inflight, e.limit = P[6] .. hash, P[7] .. hash end
  return e
end, P[5], P[8])
local configs = {}
for k = 1, tonumber(ARGV[a]) do configs[k] = P[2] .. ARGV[a + k] end
a = a + 1 + #configs

local n = (#ARGV - a + 1) / 5
if ARGV[14] ~= '' and redis.call('EXISTS', ARGV[14]) == 0 then
  for _ = 1, n do reply('rebuilding') end
  return out
end
local now, now_text
for i = 0, n - 1 do
  local r0 = a + 5 * i
  -- `+ 0`: tonumber's conversion of text known to be a number, without its call.
  if ARGV[r0 + 2] ~= '' then now, now_text = ARGV[r0 + 2] + 0, ARGV[r0 + 2] end
  local e, id, flags = eps[ARGV[r0] + 0], ARGV[r0 + 3], ARGV[r0 + 4] + 0
  local lane = bit.band(flags, 2) == 0 and 'fast' or 'slow'
  local k_cfg = bit.band(flags, 8) == 0 and configs[ARGV[r0 + 1] + 0] or nil
  local kind = admit(e, k_cfg, bit.band(flags, 4) ~= 0, now, now_text, lane, id, math.floor(flags / 32), bit.band(flags, 16) ~= 0)
  if kind == 'wait' and lane == 'fast' then
    -- Queued (again): a fresh score keeps it in the endpoint's view.
    queue(e.queued, id, now)
  elseif bit.band(flags, 1) ~= 0 then
    queue(e.queued, id, false)
  end
end

for _, key in ipairs(leased) do redis.call('PEXPIRE', key, ARGV[7]) end
for _, key in ipairs(bucket_order) do
  local b = buckets[key]
  -- Tokens are stored with 17 significant digits (tostring keeps 14), so the fraction
  -- survives the round trip exactly, as in core/policy/token-bucket.ts.
  redis.call('HSET', key, 'tokens', string.format('%.17g', b.tokens), 'at', b.at)
  if b.took then redis.call('PEXPIRE', key, math.ceil(burst / rate * 1000) + 60000) end
end
for _, key in ipairs(queue_order) do
  local q = queues[key]
  local gone, queued = {}, {}
  for _, id in ipairs(q.order) do
    local score = q.last[id]
    if score then
      queued[#queued + 1] = score
      queued[#queued + 1] = id
    else
      gone[#gone + 1] = id
    end
  end
  bulk('ZREM', key, gone, 1)
  bulk('ZADD', key, queued, 2)
  if q.added then redis.call('PEXPIRE', key, '60000') end
end
return out
