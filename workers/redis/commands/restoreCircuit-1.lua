-- restoreCircuit: a rebuild opens a circuit again from its last transition on howk.guards,
-- unless the live system has it open or half-open already (that state is newer: it wins). A
-- closed state is replaced: written on the empty Redis by an attempt that ended after the
-- loss, it only counts failures since then, and an open circuit was recorded.
-- KEYS[1] circuit:{hash}
-- ARGV[1] open_until ms   ARGV[2] opened_count   ARGV[3] TTL ms
-- Returns 1 when restored, 0 when the circuit was open or half-open.
local state = redis.call('HGET', KEYS[1], 'state')
if state and state ~= 'CLOSED' then return 0 end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'state', 'OPEN', 'open_until', ARGV[1], 'opened_count', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
