-- writeMarks: the sent marks of 2xx answers (workers/redis/ended-lookup.ts), one call for all
-- those waiting, instead of two commands each. A mark is a field of its webhook's status hash;
-- the hash gets the status's TTL, so one made by a mark alone (the api's status write failed)
-- expires too.
--
-- KEYS: none (one Redis; a cluster writes its marks per slot, apart)
-- ARGV[1] status key prefix (keys.status(''))
-- ARGV[2] TTL ms of the status
-- then pairs: webhook id, mark ('<pass>:<status>:<at ms>:<duration ms>')
-- Returns the number of marks written.

local prefix, ttl = ARGV[1], ARGV[2]
for i = 3, #ARGV, 2 do
  local key = prefix .. ARGV[i]
  redis.call('HSET', key, 'sent', ARGV[i + 1])
  redis.call('PEXPIRE', key, ttl)
end
return (#ARGV - 2) / 2
