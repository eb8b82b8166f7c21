-- putDeadLetter: stores a webhook's latest dead letter and indexes it for listing.
--
-- KEYS[1]  dead-letter hash (keys.deadLetter(id)): `data` (raw record), `at` (dead_at ms),
--          `member` (its index member), `rix` (the reason index it is in)
-- KEYS[2]  config index (keys.deadLetterIndex(config))
-- KEYS[3]  reason index (keys.deadLetterReasonIndex(config, reason_type))
-- ARGV[1]  index member: 13-digit dead_at ms .. ':' .. webhook id (time order = lexicographic order)
-- ARGV[2]  the raw dead-letter record
-- ARGV[3]  dead_at (ms)
-- ARGV[4]  TTL (ms) of the hash
-- ARGV[5]  trim floor: index members lexicographically below it have expired and are dropped
--
-- Returns 1 when stored, 0 when a dead letter of this webhook with the same or a later
-- dead_at is stored (a redelivered batch dead-letters again: listed once). A webhook that
-- dies again after a retry moves to its new place in the indexes.

local prev = redis.call('HMGET', KEYS[1], 'at', 'member', 'rix')
if prev[1] and tonumber(prev[1]) >= tonumber(ARGV[3]) then return 0 end
if prev[2] then
  redis.call('ZREM', KEYS[2], prev[2])
  if prev[3] then redis.call('ZREM', prev[3], prev[2]) end
end
redis.call('HSET', KEYS[1], 'data', ARGV[2], 'at', ARGV[3], 'member', ARGV[1], 'rix', KEYS[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
local floor = '(' .. ARGV[5]
for i = 2, 3 do
  redis.call('ZADD', KEYS[i], 0, ARGV[1])
  redis.call('ZREMRANGEBYLEX', KEYS[i], '-', floor)
end
return 1
