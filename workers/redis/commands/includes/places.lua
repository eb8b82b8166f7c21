-- places: the endpoints and hosts of one guard call, each sent once (workers/redis/guards.ts,
-- Places.args), read the same way by admitDelivery.lua and completeDelivery.lua, which
-- include it with `--#include places`.
-- KEYS: none of its own.   ARGV: the includer's arguments.
-- Returns read(a, endpoint, inflight_prefix, limit_prefix), which reads from ARGV[a]: E, then
-- per endpoint its hash and its host's number (1..H); then H, then per host the host and its
-- domain limit ceiling. endpoint(hash) makes an endpoint's table (the keys its script reads);
-- read sets its `host` to the host's table {inflight, limit, max} (keys from the two prefixes).
-- read returns the endpoints and the index of the first argument after them.
return function(a, endpoint, inflight_prefix, limit_prefix)
  local eps, hosts = {}, {}
  local n = tonumber(ARGV[a])
  a = a + 1
  for k = 1, n do
    local e = endpoint(ARGV[a])
    e.host = tonumber(ARGV[a + 1])
    eps[k] = e
    a = a + 2
  end
  n = tonumber(ARGV[a])
  a = a + 1
  for k = 1, n do
    local host = ARGV[a]
    hosts[k] = {inflight = inflight_prefix .. host, limit = limit_prefix .. host, max = tonumber(ARGV[a + 1])}
    a = a + 2
  end
  for _, e in ipairs(eps) do e.host = hosts[e.host] end
  return eps, a
end
