-- setStatus: one webhook's status (last-write-wins) plus its capped attempt history.
--
-- KEYS[1]  status hash (keys.status(id)): fields `data` (WebhookStatus JSON), `ts` (updated_at_ns)
-- KEYS[2]  history list (keys.statusHistory(id)), oldest first
-- ARGV[1]  WebhookStatus JSON
-- ARGV[2]  its updated_at_ns: decimal string without leading zeros (19 digits today)
-- ARGV[3]  TTL in ms of both keys, refreshed on every call (even a stale one, as in memory)
-- ARGV[4]  AttemptRecord JSON to append, or '' for none; appended even when the status is stale
-- ARGV[5]  history limit: keep the last N attempts
-- ARGV[6]  '1' = patch: merge the given fields into the stored status (if any) instead of
--          replacing it (a webhook held back changes a few fields, keeps its last attempt's)
--
-- Returns 1 when the status was written, 0 when the stored one is newer or equal.

-- Stamps are compared as decimal text: Lua numbers are doubles, which cannot tell
-- apart stamps ~1e18 that differ by less than 256 ns. Byte by byte rather than `>`,
-- because Lua's string `<` goes through strcoll and the server's locale.
local function is_newer(a, b)
  if not b then return true end
  if #a ~= #b then return #a > #b end
  for i = 1, #a do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x > y end
  end
  return false
end

local ttl = ARGV[3]
local written = 0
if is_newer(ARGV[2], redis.call('HGET', KEYS[1], 'ts') or nil) then
  local data = ARGV[1]
  if ARGV[6] == '1' then
    local stored = redis.call('HGET', KEYS[1], 'data')
    if stored then
      local cur = cjson.decode(stored)
      for k, v in pairs(cjson.decode(ARGV[1])) do cur[k] = v end
      data = cjson.encode(cur)
    end
  end
  redis.call('HSET', KEYS[1], 'data', data, 'ts', ARGV[2])
  written = 1
end
redis.call('PEXPIRE', KEYS[1], ttl)

if ARGV[4] ~= '' then
  redis.call('RPUSH', KEYS[2], ARGV[4])
  redis.call('LTRIM', KEYS[2], -tonumber(ARGV[5]), -1)
end
redis.call('PEXPIRE', KEYS[2], ttl)

return written
