-- claimIdempotency: claims an idempotency key for a webhook, or answers who holds it.
--
-- KEYS[1]  idempotency key (keys.idempotency: the config id in braces)
-- KEYS[2]  the same claim in the shape keys had before (keys.legacyIdempotency): only read,
--          so that a key claimed just before an upgrade still dedupes until it expires
-- ARGV[1]  webhook id claiming the key
-- ARGV[2]  ttl (ms)
--
-- Returns the webhook id holding the claim before this call (the legacy key's first), or
-- false (nil) when the claim is now ARGV[1]'s.

local legacy = redis.call('GET', KEYS[2])
if legacy then return legacy end
return redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2], 'NX', 'GET')
