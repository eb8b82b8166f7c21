-- readEnded: what the ended-status lookup needs of a batch's webhooks (workers/redis/ended-lookup.ts),
-- read where the status is and answered small. The status text is a few hundred bytes per
-- webhook; sending it whole to be decoded in the worker cost more than the rest of the lookup.
--
-- KEYS: none, or KEYS[1] any key of the call's slot (a cluster routes the call by it)
-- ARGV[1] status key prefix (keys.status('')); on a cluster it ends in '{' and a key is closed
--   with '}' (the id is its hash tag, clusterKeys)
-- ARGV[2..] webhook ids
-- Returns two strings per id, in the order given: its attempt count when its stored status has
-- ended (delivered, failed, exhausted), else ''; its sent mark (the status hash's `sent`
-- field, '<pass>:<status>:<at ms>:<duration ms>'), else ''.
--
-- The status is flat JSON written by JSON.stringify or cjson (no spaces), and a quote inside a
-- JSON string is always escaped, so '"state":"' and '"attempts":' match only its own fields.

local ENDED = { delivered = true, failed = true, exhausted = true }
local prefix = ARGV[1]
local suffix = string.sub(prefix, -1) == '{' and '}' or ''
local out, n = {}, 0
for i = 2, #ARGV do
  local got = redis.call('HMGET', prefix .. ARGV[i] .. suffix, 'data', 'sent')
  local data, mark = got[1], got[2]
  local ended = ''
  if data and ENDED[string.match(data, '"state":"(%a+)"') or ''] then ended = string.match(data, '"attempts":(%d+)') or '' end
  out[n + 1] = ended
  out[n + 2] = mark or ''
  n = n + 2
end
return out
