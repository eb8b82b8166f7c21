-- releaseIdempotency: gives an idempotency key back only if it still holds our webhook id.
--
-- KEYS[1]  idempotency key
-- ARGV[1]  webhook id that claimed it
--
-- Returns 1 when the key was deleted, 0 when it is absent or owned by another webhook.

if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
