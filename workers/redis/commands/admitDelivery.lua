-- admitDelivery: may these webhooks be delivered now? For each request, in order: pause,
-- circuit, rate limit, then the domain and endpoint adaptive limits with the lane rule,
-- decided and counted atomically (mirrors core/memory/guards.ts, core/policy/circuit.ts and
-- core/policy/adaptive-limit.ts). One call carries every admission a worker asks for at
-- once: one round trip and one script run for all of them.
-- In flight is a zset of leases per endpoint and per host (member: webhook id, score: when
-- the lease runs out, ms): expired leases (a worker killed before its completion) are
-- dropped before counting, so a leaked count ends on its own however busy the endpoint is.
-- KEYS: nine per request i (b = 9*i):
--   KEYS[b+1] paused:endpoint:{hash}   KEYS[b+2] paused:config:{id}   KEYS[b+3] circuit:{hash}
--   KEYS[b+4] rate:{hash}              KEYS[b+5] domain_inflight:{host} (zset)   KEYS[b+6] inflight:{hash} (zset)
--   KEYS[b+7] limit:{hash}             KEYS[b+8] domain_limit:{host}   KEYS[b+9] endpoint_queued:{hash}
--   then optionally one more, last: howk:system:initialized (the canary). When given and absent,
--   Redis was lost and is not rebuilt yet (no pause or circuit to read): every request gets
--   {'rebuilding'} and nothing is written.
-- ARGV[1] circuit enabled (1|0)   ARGV[2] probe_interval ms   ARGV[3] circuit state TTL ms
-- ARGV[4] rate per s (0 = off)   ARGV[5] burst   ARGV[6] endpoint fast-lane share (0 = off)
-- ARGV[7] in-flight lease ms (a lease taken now runs out at now + this; also the zset's TTL)
-- ARGV[8] initial limit   ARGV[9] floor   ARGV[10] tolerance   ARGV[11] slow threshold ms
-- ARGV[12] window ms   ARGV[13] endpoint limit ceiling
-- then five per request i (a = 13 + 5*i): ARGV[a+1] now ms   ARGV[a+2] lane ('fast'|'slow')
--   ARGV[a+3] domain limit ceiling (0 = off)   ARGV[a+4] webhook id (its lease and queue member)
--   ARGV[a+5] waited before 1|0
-- Returns one reply per request, in request order, each one of:
--   {'rebuilding'} | {'paused', scope} | {'park', reason, until} | {'divert', reason} | {'recovered'} | {'wait'}
--   | {'go', probe 0|1, counted_endpoint 0|1, counted_domain 0|1, fast-lane limit (0 = off),
--      limit, latency estimate ms (both as text)}
--   (counted_*: a lease was taken in inflight / domain_inflight)
-- A fast-lane 'wait' puts the webhook in endpoint_queued (score: now) until a later request
-- of it that waited gets another answer.
--#include adaptiveLimit
local L = adaptiveLimit({}, {ARGV[8], ARGV[9], ARGV[10], ARGV[11], ARGV[12]})
local circuit_on = ARGV[1] == '1'
local probe_interval = tonumber(ARGV[2])
local circuit_ttl = ARGV[3]
local rate = tonumber(ARGV[4])
local burst = tonumber(ARGV[5])
local endpoint_max = tonumber(ARGV[6])
local lease_ms = tonumber(ARGV[7])
local ceiling = tonumber(ARGV[13])

-- Admission reads limit states and never writes them: each is read once per call, however
-- many requests of the call share it.
local loaded = {}
local function load(key, ceil)
  local k = key .. '\0' .. ceil
  local s = loaded[k]
  if not s then
    s = L.load(key, ceil)
    loaded[k] = s
  end
  return s
end

-- Leases in force at `now`; the expired ones go.
local function inflight(key, now)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  return redis.call('ZCARD', key)
end

local function lease(key, now, id)
  -- The slow lane takes leases without counting first: expired ones must not pile up.
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  redis.call('ZADD', key, now + lease_ms, id)
  -- Every lease in the set ends within lease_ms: the TTL only matters once it goes idle.
  redis.call('PEXPIRE', key, lease_ms)
end

local function admit(b, now, lane, domain_max, id)
  local k_pause_ep, k_pause_cfg, k_circuit = KEYS[b + 1], KEYS[b + 2], KEYS[b + 3]
  local k_rate, k_domain, k_conc = KEYS[b + 4], KEYS[b + 5], KEYS[b + 6]
  if redis.call('EXISTS', k_pause_ep) == 1 then return {'paused', 'endpoint'} end
  if redis.call('EXISTS', k_pause_cfg) == 1 then return {'paused', 'config'} end

  local probe = 0
  if circuit_on then
    local c = redis.call('HMGET', k_circuit, 'state', 'open_until', 'probe_at')
    local state = c[1] or 'CLOSED'
    if state == 'OPEN' then
      local open_until = tonumber(c[2] or '0')
      if now < open_until then return {'park', 'circuit_open', tostring(open_until)} end
      redis.call('HSET', k_circuit, 'state', 'HALF_OPEN', 'successes', 0, 'probe_at', now)
      redis.call('PEXPIRE', k_circuit, circuit_ttl)
      probe = 1
    elseif state == 'HALF_OPEN' then
      local next_probe = tonumber(c[3] or '0') + probe_interval
      if now < next_probe then return {'park', 'circuit_open', tostring(next_probe)} end
      redis.call('HSET', k_circuit, 'probe_at', now)
      probe = 1
    end
  end

  if rate > 0 then
    -- Tokens are stored with 17 significant digits (tostring keeps 14), so the fraction
    -- survives the round trip exactly, as in core/policy/token-bucket.ts.
    local bk = redis.call('HMGET', k_rate, 'tokens', 'at')
    local tokens = tonumber(bk[1] or burst)
    local at = tonumber(bk[2] or now)
    tokens = math.min(burst, tokens + math.max(0, now - at) / 1000 * rate)
    if tokens < 1 then
      redis.call('HSET', k_rate, 'tokens', string.format('%.17g', tokens), 'at', now)
      return {'park', 'rate_limited', tostring(now + math.ceil((1 - tokens) / rate * 1000))}
    end
    redis.call('HSET', k_rate, 'tokens', string.format('%.17g', tokens - 1), 'at', now)
    redis.call('PEXPIRE', k_rate, math.ceil(burst / rate * 1000) + 60000)
  end

  -- Without an endpoint limit nothing is measured: the endpoint never counts as slow.
  local ep = nil
  local slow = false
  if endpoint_max > 0 then
    ep = load(KEYS[b + 7], ceiling)
    slow = L.slowness(ep, now)
  end

  -- The lane rule (laneDecision): at a limit, a slow endpoint goes to the slow lane and a
  -- fast one waits its turn; the slow lane waits at a full host.
  if domain_max > 0 then
    local allowed = math.min(L.allowed(load(KEYS[b + 8], domain_max)), domain_max)
    if inflight(k_domain, now) >= allowed then
      if lane == 'fast' and slow then return {'divert', 'domain_inflight'} end
      return {'wait'}
    end
  end

  local fast_limit = 0
  if ep then
    fast_limit = math.min(L.allowed(ep), endpoint_max)
    if lane == 'slow' then
      if not slow then return {'recovered'} end
    elseif inflight(k_conc, now) >= fast_limit then
      if slow then return {'divert', 'endpoint_inflight'} end
      return {'wait'}
    end
  end

  if domain_max > 0 then lease(k_domain, now, id) end
  if ep then
    lease(k_conc, now, id)
    return {'go', probe, 1, domain_max > 0 and 1 or 0, fast_limit, string.format('%.17g', ep.limit), string.format('%.17g', ep.lat)}
  end
  return {'go', probe, 0, domain_max > 0 and 1 or 0, 0, '0', '0'}
end

local n = math.floor(#KEYS / 9)
local out = {}
if #KEYS > 9 * n and redis.call('EXISTS', KEYS[#KEYS]) == 0 then
  for i = 1, n do out[i] = {'rebuilding'} end
  return out
end
for i = 0, n - 1 do
  local a = 13 + 5 * i
  local now, lane = tonumber(ARGV[a + 1]), ARGV[a + 2]
  local r = admit(9 * i, now, lane, tonumber(ARGV[a + 3]), ARGV[a + 4])
  local k_queued = KEYS[9 * i + 9]
  if r[1] == 'wait' and lane == 'fast' then
    -- Queued (again): a fresh score keeps it in the endpoint's view.
    redis.call('ZADD', k_queued, now, ARGV[a + 4])
    redis.call('PEXPIRE', k_queued, 60000)
  elseif ARGV[a + 5] == '1' then
    redis.call('ZREM', k_queued, ARGV[a + 4])
  end
  out[i + 1] = r
end
return out
