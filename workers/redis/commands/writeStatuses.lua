-- writeStatuses: for each of several webhooks, in order, setStatus-2.lua then indexStatus-3.lua
-- (status last-write-wins + capped history, then the listing-index entries), in one script
-- run: the status writes of a whole batch cost one round trip and one script call instead of
-- two per webhook. The two scripts are included unchanged (workers/redis/scripts.ts turns each
-- `--#include name` line into `local function name(KEYS, ARGV) <body> end`), so their logic
-- and header contracts stay in one place.
-- KEYS: four per webhook i (b = 4*i): KEYS[b+1] status hash   KEYS[b+2] history list
--   KEYS[b+3] config index or ''   KEYS[b+4] endpoint index or ''   (as setStatus/indexStatus)
-- ARGV[1] TTL ms of status and history   ARGV[2] history limit   ARGV[3] index trim floor
-- then six per webhook i (a = 3 + 6*i): ARGV[a+1] WebhookStatus JSON   ARGV[a+2] updated_at_ns
--   ARGV[a+3] AttemptRecord JSON or ''   ARGV[a+4] patch '1'|'0'   ARGV[a+5] webhook id
--   ARGV[a+6] state-index prefix, or '' to use the stored one
-- Returns, per webhook in order, setStatus's reply: 1 written, 0 stale.
--#include setStatus
--#include indexStatus

local out = {}
for i = 0, #KEYS / 4 - 1 do
  local b, a = 4 * i, 3 + 6 * i
  out[i + 1] = setStatus({KEYS[b + 1], KEYS[b + 2]}, {ARGV[a + 1], ARGV[a + 2], ARGV[1], ARGV[a + 3], ARGV[2], ARGV[a + 4]})
  indexStatus({KEYS[b + 1], KEYS[b + 3], KEYS[b + 4]}, {ARGV[a + 5], ARGV[a + 6], ARGV[3]})
end
return out
