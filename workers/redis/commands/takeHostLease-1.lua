-- takeHostLease: on a Redis Cluster, the host's half of an admission (the endpoint's half is
-- admitDelivery, in the endpoint's slot: workers/redis/guard-cluster.ts). Takes an in-flight
-- lease on the host for each webhook, in order, while the host's leases in force are below
-- its limit. The zset is the one admitDelivery keeps on one Redis (member: webhook id, score:
-- when the lease runs out, ms), so renewal, completion and expiry treat it the same way.
-- A webhook already holding a lease takes it over (a copy of a delivery counted there, as in
-- admitDelivery): its end moves, nothing more is counted.
--
-- KEYS[1]  domain_inflight:{host} (zset of leases)
-- ARGV[1]  the host's limit (max_inflight_per_domain or its override; > 0)
-- ARGV[2]  lease ms (a lease taken at now runs out at now + this; also the zset's TTL)
-- ARGV[3..] two per webhook: now ms, webhook id
--
-- Returns one integer per webhook, in order: 1 leased, 2 leased already (taken over: not to be
-- given back if its endpoint refuses, the copy on the wire still counts), 0 the host is full
-- (wait).
local limit = tonumber(ARGV[1])
local lease_ms = tonumber(ARGV[2])
local out, took, pruned = {}, false, nil
local n = nil
for i = 3, #ARGV - 1, 2 do
  local now, id = tonumber(ARGV[i]), ARGV[i + 1]
  -- Expired leases (a worker killed before its completion) are dropped before counting.
  if pruned == nil or now > pruned then
    redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[i])
    n = redis.call('ZCARD', KEYS[1])
    pruned = now
  end
  if n < limit or redis.call('ZSCORE', KEYS[1], id) then
    local added = redis.call('ZADD', KEYS[1], string.format('%d', now + lease_ms), id)
    n = n + added
    took = true
    out[#out + 1] = added == 1 and 1 or 2
  else
    out[#out + 1] = 0
  end
end
if took then redis.call('PEXPIRE', KEYS[1], lease_ms) end
return out
