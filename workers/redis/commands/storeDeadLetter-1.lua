-- storeDeadLetter: stores a webhook's latest dead letter (the hash only; its indexes are
-- indexDeadLetter-2.lua's: together in putDeadLetter-3.lua on one Redis, apart on a Redis
-- Cluster, where the indexes are their config's slot).
--
-- KEYS[1]  dead-letter hash (keys.deadLetter(id)): `data` (raw record), `at` (dead_at ms),
--          `member` (its index member), `rix` (the reason index it is in)
-- ARGV[1]  index member: 13-digit dead_at ms .. ':' .. webhook id
-- ARGV[2]  the raw dead-letter record
-- ARGV[3]  dead_at (ms)
-- ARGV[4]  TTL (ms) of the hash
-- ARGV[5]  the reason index it goes in (keys.deadLetterReasonIndex(config, reason_type))
--
-- Returns 0 when a dead letter of this webhook with the same or a later dead_at is stored (a
-- redelivered batch dead-letters again: listed once), else {previous member, previous reason
-- index} ('' each when it had none): the index entries the new one replaces.

local prev = redis.call('HMGET', KEYS[1], 'at', 'member', 'rix')
if prev[1] and tonumber(prev[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('HSET', KEYS[1], 'data', ARGV[2], 'at', ARGV[3], 'member', ARGV[1], 'rix', ARGV[5])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return {prev[2] or '', prev[3] or ''}
