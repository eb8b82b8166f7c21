-- admitDelivery: may these webhooks be delivered now? For each request, in order: pause,
-- circuit, rate limit, domain and endpoint in-flight limits, decided and counted atomically
-- (mirrors core/memory/guards.ts and core/policy/circuit.ts). One call carries every
-- admission a worker asks for at once: one round trip and one script run for all of them.
-- KEYS: six per request i (b = 6*i):
--   KEYS[b+1] paused:endpoint:{hash}   KEYS[b+2] paused:config:{id}   KEYS[b+3] circuit:{hash}
--   KEYS[b+4] rate:{hash}              KEYS[b+5] domain_concurrency:{host}   KEYS[b+6] concurrency:{hash}
-- ARGV[1] circuit enabled (1|0)   ARGV[2] probe_interval ms   ARGV[3] circuit state TTL ms
-- ARGV[4] rate per s (0 = off)   ARGV[5] burst   ARGV[6] endpoint limit (0 = off)
-- ARGV[7] in-flight counter TTL ms
-- then three per request i (a = 7 + 3*i): ARGV[a+1] now ms   ARGV[a+2] lane ('fast'|'slow')
--   ARGV[a+3] domain limit (0 = off)
-- Returns one reply per request, in request order, each one of:
--   {'paused', scope} | {'park', reason, until} | {'divert', reason} | {'recovered'} | {'wait'}
--   | {'go', probe 0|1, counted_endpoint 0|1, counted_domain 0|1}
local circuit_on = ARGV[1] == '1'
local probe_interval = tonumber(ARGV[2])
local circuit_ttl = ARGV[3]
local rate = tonumber(ARGV[4])
local burst = tonumber(ARGV[5])
local endpoint_max = tonumber(ARGV[6])
local inflight_ttl = ARGV[7]

local function admit(b, now, lane, domain_max)
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

  if domain_max > 0 and tonumber(redis.call('GET', k_domain) or '0') >= domain_max then
    if lane == 'fast' then return {'divert', 'domain_inflight'} end
    return {'wait'}
  end

  if endpoint_max > 0 then
    local n = tonumber(redis.call('GET', k_conc) or '0')
    if lane == 'fast' and n >= endpoint_max then return {'divert', 'endpoint_inflight'} end
    -- Back to the fast lane only once the endpoint is idle; with any in flight the slow lane
    -- keeps it (returning at "some room" makes traffic ping-pong between the lanes).
    if lane == 'slow' and n == 0 then return {'recovered'} end
  end

  if domain_max > 0 then
    redis.call('INCR', k_domain)
    redis.call('PEXPIRE', k_domain, inflight_ttl)
  end
  if endpoint_max > 0 then
    redis.call('INCR', k_conc)
    redis.call('PEXPIRE', k_conc, inflight_ttl)
  end
  return {'go', probe, endpoint_max > 0 and 1 or 0, domain_max > 0 and 1 or 0}
end

local out = {}
for i = 0, #KEYS / 6 - 1 do
  local a = 7 + 3 * i
  out[i + 1] = admit(6 * i, tonumber(ARGV[a + 1]), ARGV[a + 2], tonumber(ARGV[a + 3]))
end
return out
