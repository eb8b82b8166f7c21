-- indexDeadLetter: puts a stored dead letter (storeDeadLetter-1.lua) in its config's indexes,
-- in place of the entry it replaces: a webhook that dies again after a retry moves to its new
-- place. A listing checks each entry against the hash, so an entry left behind by a race of
-- two writers of one webhook (a Redis Cluster runs the two scripts apart) is never listed.
--
-- KEYS[1]  config index (keys.deadLetterIndex(config))
-- KEYS[2]  reason index (keys.deadLetterReasonIndex(config, reason_type))
-- ARGV[1]  index member: 13-digit dead_at ms .. ':' .. webhook id (time order = lexicographic order)
-- ARGV[2]  trim floor: index members lexicographically below it have expired and are dropped
-- ARGV[3]  the member it replaces ('' none)
-- ARGV[4]  the reason index that member is in ('' none; a key of the same config: its slot)
--
-- Returns 1.

if ARGV[3] ~= '' then
  redis.call('ZREM', KEYS[1], ARGV[3])
  if ARGV[4] ~= '' then redis.call('ZREM', ARGV[4], ARGV[3]) end
end
local floor = '(' .. ARGV[2]
for i = 1, 2 do
  redis.call('ZADD', KEYS[i], 0, ARGV[1])
  redis.call('ZREMRANGEBYLEX', KEYS[i], '-', floor)
end
return 1
