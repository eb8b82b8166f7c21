-- admitDelivery: may one webhook be delivered now? Pause, circuit, rate limit, domain and
-- endpoint in-flight limits, decided and counted atomically (mirrors core/memory/guards.ts
-- and core/policy/circuit.ts).
-- KEYS[1] paused:endpoint:{hash}   KEYS[2] paused:config:{id}   KEYS[3] circuit:{hash}
-- KEYS[4] rate:{hash}              KEYS[5] domain_concurrency:{host}   KEYS[6] concurrency:{hash}
-- ARGV[1] now ms   ARGV[2] lane ('fast'|'slow')   ARGV[3] circuit enabled (1|0)
-- ARGV[4] probe_interval ms   ARGV[5] circuit state TTL ms   ARGV[6] rate per s (0 = off)
-- ARGV[7] burst   ARGV[8] domain limit (0 = off)   ARGV[9] endpoint limit (0 = off)
-- ARGV[10] in-flight counter TTL ms
-- Returns one of: {'paused', scope} | {'park', reason, until} | {'divert', reason}
--   | {'recovered'} | {'wait'} | {'go', probe 0|1, counted_endpoint 0|1, counted_domain 0|1}
local now = tonumber(ARGV[1])
local lane = ARGV[2]

if redis.call('EXISTS', KEYS[1]) == 1 then return {'paused', 'endpoint'} end
if redis.call('EXISTS', KEYS[2]) == 1 then return {'paused', 'config'} end

local probe = 0
if ARGV[3] == '1' then
  local c = redis.call('HMGET', KEYS[3], 'state', 'open_until', 'probe_at')
  local state = c[1] or 'CLOSED'
  if state == 'OPEN' then
    local open_until = tonumber(c[2] or '0')
    if now < open_until then return {'park', 'circuit_open', tostring(open_until)} end
    redis.call('HSET', KEYS[3], 'state', 'HALF_OPEN', 'successes', 0, 'probe_at', now)
    redis.call('PEXPIRE', KEYS[3], ARGV[5])
    probe = 1
  elseif state == 'HALF_OPEN' then
    local next_probe = tonumber(c[3] or '0') + tonumber(ARGV[4])
    if now < next_probe then return {'park', 'circuit_open', tostring(next_probe)} end
    redis.call('HSET', KEYS[3], 'probe_at', now)
    probe = 1
  end
end

local rate = tonumber(ARGV[6])
if rate > 0 then
  -- Tokens are stored with 17 significant digits (tostring keeps 14), so the fraction
  -- survives the round trip exactly, as in core/policy/token-bucket.ts.
  local burst = tonumber(ARGV[7])
  local b = redis.call('HMGET', KEYS[4], 'tokens', 'at')
  local tokens = tonumber(b[1] or ARGV[7])
  local at = tonumber(b[2] or ARGV[1])
  tokens = math.min(burst, tokens + math.max(0, now - at) / 1000 * rate)
  if tokens < 1 then
    redis.call('HSET', KEYS[4], 'tokens', string.format('%.17g', tokens), 'at', now)
    return {'park', 'rate_limited', tostring(now + math.ceil((1 - tokens) / rate * 1000))}
  end
  redis.call('HSET', KEYS[4], 'tokens', string.format('%.17g', tokens - 1), 'at', now)
  redis.call('PEXPIRE', KEYS[4], math.ceil(burst / rate * 1000) + 60000)
end

local domain_max = tonumber(ARGV[8])
if domain_max > 0 and tonumber(redis.call('GET', KEYS[5]) or '0') >= domain_max then
  if lane == 'fast' then return {'divert', 'domain_inflight'} end
  return {'wait'}
end

local endpoint_max = tonumber(ARGV[9])
if endpoint_max > 0 then
  local n = tonumber(redis.call('GET', KEYS[6]) or '0')
  if lane == 'fast' and n >= endpoint_max then return {'divert', 'endpoint_inflight'} end
  -- Back to the fast lane only once the endpoint is idle; with any in flight the slow lane
  -- keeps it (returning at "some room" makes traffic ping-pong between the lanes).
  if lane == 'slow' and n == 0 then return {'recovered'} end
end

if domain_max > 0 then
  redis.call('INCR', KEYS[5])
  redis.call('PEXPIRE', KEYS[5], ARGV[10])
end
if endpoint_max > 0 then
  redis.call('INCR', KEYS[6])
  redis.call('PEXPIRE', KEYS[6], ARGV[10])
end
return {'go', probe, endpoint_max > 0 and 1 or 0, domain_max > 0 and 1 or 0}
