-- mirrorKey: one API key record of the keys topic into the edge's mirror of the key table.
-- Replicas replay the topic from its start, so a replica that starts late writes a key's
-- older records after a newer one was mirrored: a revoked record is never replaced by an
-- unrevoked one (a key is never un-revoked), so a late replay cannot revive a key.
-- KEYS[1] howk:keys (hash: key id -> record JSON)
-- ARGV[1] key id   ARGV[2] the record JSON ('' = tombstone: the field goes)   ARGV[3] 1 when this record is revoked
-- Returns 1 when written, 0 when a revoked record was kept.
if ARGV[2] == '' then
  redis.call('HDEL', KEYS[1], ARGV[1])
  return 1
end
if ARGV[3] ~= '1' then
  local cur = redis.call('HGET', KEYS[1], ARGV[1])
  if cur then
    local ok, rec = pcall(cjson.decode, cur)
    if ok and type(rec) == 'table' and rec.revoked_at ~= nil and rec.revoked_at ~= cjson.null then return 0 end
  end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
