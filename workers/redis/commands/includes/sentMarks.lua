-- sentMarks: a section of sent marks (workers/redis/ended-lookup.ts), written by
-- completeDelivery.lua (the marks riding a completion: workers/redis/riding-marks.ts) and by
-- writeMarks.lua (those no completion took), which include it with `--#include sentMarks`.
-- A mark is the `sent` field of its webhook's status hash; the hash gets the status's TTL, so
-- one made by a mark alone (the api's status write failed) expires too.
-- KEYS: none of its own.   ARGV: the includer's arguments.
-- Returns write(a), which reads from ARGV[a]: M, the number of marks; when M > 0, the status
-- key prefix (keys.status('')), its TTL ms, then two per mark: the webhook id and its mark
-- ('<pass>:<status>:<at ms>:<duration ms>'). write returns the index of the first argument after them.
return function(a)
  local m = tonumber(ARGV[a])
  if m == 0 then return a + 1 end
  local prefix, ttl = ARGV[a + 1], ARGV[a + 2]
  local last = a + 2 + 2 * m
  for j = a + 3, last, 2 do
    local key = prefix .. ARGV[j]
    redis.call('HSET', key, 'sent', ARGV[j + 1])
    redis.call('PEXPIRE', key, ttl)
  end
  return last + 1
end
