-- adaptiveLimit: the adaptive concurrency limit of core/policy/adaptive-limit.ts, operation
-- for operation (the same doubles, so both give the same limits), included by
-- admitDelivery.lua and completeDelivery.lua with `--#include adaptiveLimit`.
-- KEYS: none (the includer passes the key of each state).
-- ARGV[1] initial limit   ARGV[2] floor   ARGV[3] tolerance   ARGV[4] slow threshold ms
--   ARGV[5] window ms (a timeout within it makes the endpoint slow)
-- Returns a table of functions: load(key, ceiling, field) (the state, and the value of `field`
-- when given, read by the same HMGET), next(state, ms, drop, timeout, inflight, now, ceiling)
-- (moves the state to the one after a sample, in place: no table per sample), save(key, state, field, value) (HSET of the state, and of the
-- field when given; the TTL is the caller's), slowness(state, now), allowed(state).
-- A state is stored as a hash: limit, min, lat (17 significant digits: exact round trip),
-- timeout_at (completeDelivery.lua keeps more fields beside them).
local initial, floor = tonumber(ARGV[1]), tonumber(ARGV[2])
local tolerance, slow_threshold, window = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local SLACK_MS, SMOOTHING, LATENCY_WEIGHT, MIN_DRIFT, BACKOFF, MIN_GRADIENT = 20, 0.2, 0.2, 0.002, 0.9, 0.5

local function clamp(x, lo, hi) return math.min(hi, math.max(lo, x)) end

local M = {}

function M.load(key, ceiling, field)
  local s
  if field then s = redis.call('HMGET', key, 'limit', 'min', 'lat', 'timeout_at', field)
  else s = redis.call('HMGET', key, 'limit', 'min', 'lat', 'timeout_at') end
  if not s[1] then
    return {limit = clamp(initial, math.min(floor, ceiling), ceiling), min = 0, lat = 0, timeout_at = 0}, s[5]
  end
  -- `+ 0`: tonumber's conversion without its call (save writes all four fields together).
  return {limit = s[1] + 0, min = s[2] + 0, lat = s[3] + 0, timeout_at = s[4] + 0}, s[5]
end

-- The state after one sample, written into `s` (nothing written to Redis).
function M.next(s, ms, drop, timeout, inflight, now, ceiling)
  local lo, hi = math.min(floor, ceiling), ceiling
  local limit, min, lat, timeout_at = s.limit, s.min, s.lat, s.timeout_at
  if drop then
    limit = math.max(lo, limit * BACKOFF)
    if timeout then
      timeout_at = now
      if lat == 0 then lat = ms else lat = lat + (ms - lat) * LATENCY_WEIGHT end
    end
    limit = math.min(hi, limit)
  else
    if min == 0 or ms < min then min = ms else min = min + (ms - min) * MIN_DRIFT end
    if lat == 0 then lat = ms else lat = lat + (ms - lat) * LATENCY_WEIGHT end
    local near = tolerance * min + SLACK_MS
    local gradient = 1
    if lat > near then gradient = math.max(MIN_GRADIENT, near / lat) end
    local queue = 0
    if inflight * 2 >= limit then queue = math.sqrt(limit) end
    local target = limit * gradient + queue
    limit = clamp(limit * (1 - SMOOTHING) + target * SMOOTHING, lo, hi)
  end
  s.limit, s.min, s.lat, s.timeout_at = limit, min, lat, timeout_at
  return s
end

function M.save(key, s, field, value)
  local limit, min, lat = string.format('%.17g', s.limit), string.format('%.17g', s.min), string.format('%.17g', s.lat)
  if field then redis.call('HSET', key, 'limit', limit, 'min', min, 'lat', lat, 'timeout_at', s.timeout_at, field, value)
  else redis.call('HSET', key, 'limit', limit, 'min', min, 'lat', lat, 'timeout_at', s.timeout_at) end
end

function M.slowness(s, now)
  if s.timeout_at > 0 and now - s.timeout_at < window then return true, 'timeouts' end
  if s.lat > slow_threshold then return true, 'latency' end
  return false, ''
end

function M.allowed(s) return math.max(1, math.floor(s.limit)) end

return M
