-- takeToken: one token from a Svix endpoint's own bucket (its throttleRate), the same
-- arithmetic as core/policy/token-bucket.ts so howk-dev and Redis decide alike.
--
-- KEYS[1]  the bucket (keys.endpointThrottle(<endpoint hash>, <endpoint id>)), a hash {tokens, at}
-- ARGV[1]  now (ms)
-- ARGV[2]  rate (tokens per second, > 0)
-- ARGV[3]  burst (tokens saved up at most, >= 1)
--
-- Returns 0 when a token was taken, else the ms until one is there.

local now, rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local v = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(v[1] or burst)
local at = tonumber(v[2] or now)
tokens = math.min(burst, tokens + math.max(0, now - at) / 1000 * rate)
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
else
  wait = math.ceil((1 - tokens) / rate * 1000)
end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens), 'at', now)
-- A full bucket is what a missing key means: it may go once it would be full again.
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 60000)
return wait
