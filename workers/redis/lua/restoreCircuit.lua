-- restoreCircuit: a rebuild opens a circuit again from its last transition on howk.guards,
-- unless the circuit has a state already (the live system wrote it since: it wins).
-- KEYS[1] circuit:{hash}
-- ARGV[1] open_until ms   ARGV[2] opened_count   ARGV[3] TTL ms
-- Returns 1 when restored, 0 when a state was there.
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'state', 'OPEN', 'open_until', ARGV[1], 'opened_count', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
