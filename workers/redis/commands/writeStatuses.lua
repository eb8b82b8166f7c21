-- writeStatuses: the status writes of a batch, in order, in one script run. Per webhook: its
-- status (last-write-wins by updated_at_ns), its capped attempt history, and its listing-index
-- entries (config, endpoint, state), kept as indexStatus-3.lua keeps them for a replayed
-- status (the rule is the same; that script serves the rebuild, one webhook at a time).
-- The stored layout: hash status:<id> { data, ts, ix (its state index), ixp (its config's
-- state-index prefix), h (the attempt history: AttemptRecord JSON texts joined by '\n', oldest
-- first; JSON text holds no raw newline), hs (the ts this layout last wrote, or '-') }.
-- Cheap by design: one HMGET reads ts/ix/ixp/hs (and h when an attempt is appended) and one
-- HSET writes what changed, history included (appended and trimmed as text, never decoded); a
-- written status is indexed by the state the caller passed (no decode of what was just stored);
-- index entries are added and removed with one ZADD/ZREM per index key per run (one run per
-- call unless a webhook is written twice), and each index written is trimmed once per call,
-- after its adds. Status keys are built here from the prefixes given (keys.ts), and the index
-- keys of a config/endpoint pair are sent once per block of its statuses: the arguments stay
-- small. Few Lua function calls and tables per status: each costs more than the work it wraps.
-- On a Redis Cluster a call carries the statuses of one slot and no index targets (a config's
-- indexes live in its own slot; docs/ARCHITECTURE.md, "Redis Cluster: what stays atomic"):
-- the status and its history stay atomic per webhook, and nothing is indexed.
-- The layout before kept the history in a list status_history:<id> (RPUSH): a fleet being
-- upgraded still writes it. A status whose ts this layout did not write (hs ~= ts) may have
-- such a list: hs becomes '-' for good, and every write refreshes the list's TTL with the
-- status's, so that readers (list, then h) see every attempt as long as the status lives.
--
-- KEYS: none, or KEYS[1] any key of the call's slot (a cluster routes the call by it, and
--   refuses a key of another slot); all keys come from the arguments below.
-- ARGV[1] status key prefix (keys.status(''))   ARGV[2] old history list prefix (keys.statusHistory(''))
--   (on a cluster both end in '{' and a key is closed with '}': the id is its hash tag, clusterKeys)
-- ARGV[3] TTL ms of the status (and of an old history list; refreshed on every write, even a stale one)
-- ARGV[4] history limit (keep the last N attempts)
-- ARGV[5] index trim floor: members lexicographically below it are older than the TTL, dropped
-- ARGV[6] 1 when a webhook may be written more than once in this call (the blocks then follow
--   the order of its writes), else 0
-- then blocks of statuses to the end, each:
--   ARGV[b] config index, ARGV[b+1] endpoint index, ARGV[b+2] state-index prefix: the block's
--     target, or '' all three when the writer does not know its config (a patch of a held
--     webhook: the stored ixp is used, and a webhook not indexed yet stays so)
--   ARGV[b+3] m, its number of statuses that append an attempt, ARGV[b+4] k, of those that do not
--   then m statuses of five arguments, then k of four:
--     WebhookStatus JSON (a patch: only the fields it changes)
--     its updated_at_ns: decimal text without leading zeros
--     the status's state (a full write), '' (a full write naming no state: not indexed),
--       or '*' (a patch: merged into the stored status, indexed by the merged state)
--     webhook id (the index member; ULIDs, so lexicographic order is time order)
--     (the first m only) AttemptRecord JSON to append (no raw newline); appended even when
--       the status is stale
-- What a block's statuses share is sent once: a config/endpoint pair's index keys, and that
-- there is no attempt (the api's pending statuses take four arguments each). Statuses of one
-- webhook are written in the order sent.
-- Returns, per status in the order sent: 1 written, 0 stale (a newer or equal status is stored).

--#include stamps
local is_newer = stamps({}, {}).is_newer

local status_prefix, history_prefix, ttl = ARGV[1], ARGV[2], ARGV[3]
local limit, floor = tonumber(ARGV[4]), '(' .. ARGV[5]
local repeats = ARGV[6] == '1'
local suffix = string.sub(status_prefix, -1) == '{' and '}' or ''
-- The index keys of the block being written (nil: the writer does not know the config).
local cfg, ep, prefix

-- Index changes, applied in runs: per key, one ZREM of the members leaving it, then one ZADD
-- of those entering it. Within a run each webhook is written once, so a member changes at
-- most once per key and the order of the changes is free; a webhook written a second time in
-- the same call (the caller says whether one may be: ARGV[6]) first applies the run so far
-- (what applying each change in turn would leave).
local adds, rems, seen, added = {}, {}, {}, {}
local function add(key, id)
  local c = adds[key]
  if not c then
    c = {}
    adds[key] = c
    added[key] = true
  end
  local n = #c
  c[n + 1] = '0'
  c[n + 2] = id
end
local function remove(key, id)
  local c = rems[key]
  if not c then
    c = {}
    rems[key] = c
  end
  c[#c + 1] = id
end

-- In chunks: unpack's stack is bounded.
local CHUNK = 500
local function apply_changes()
  for key, ids in pairs(rems) do
    for s = 1, #ids, CHUNK do redis.call('ZREM', key, unpack(ids, s, math.min(s + CHUNK - 1, #ids))) end
  end
  for key, members in pairs(adds) do
    for s = 1, #members, 2 * CHUNK do redis.call('ZADD', key, unpack(members, s, math.min(s + 2 * CHUNK - 1, #members))) end
  end
  adds, rems, seen = {}, {}, {}
end

-- The HSET arguments of the status being written: one table for the whole call, filled from
-- 1 to nf (what lies beyond nf is left over from an earlier status and never sent), in place
-- rather than through a helper function (a Lua call costs more than the assignment).
local fields, nf = {}, 0

-- The fields to set so that the webhook is in the index of `state` (and, first time, in its
-- config and endpoint indexes), as indexStatus-3.lua decides.
local function index(id, state, ix, ixp)
  local p = prefix
  if cfg then
    if ixp ~= p then
      fields[nf + 1], fields[nf + 2] = 'ixp', p
      nf = nf + 2
    end
  else
    p = ixp
    if not p then return end
  end
  local want = p .. state
  if ix ~= want then
    if ix then remove(ix, id) end
    add(want, id)
    fields[nf + 1], fields[nf + 2] = 'ix', want
    nf = nf + 2
  end
  if not ix and cfg then
    add(cfg, id)
    add(ep, id)
  end
end

local function merged(stored, patch)
  local p = cjson.decode(patch)
  if not stored then return patch, p.state end
  local cur = cjson.decode(stored)
  for k, v in pairs(p) do cur[k] = v end
  return cjson.encode(cur), cur.state
end

-- The history with `attempt` appended, its oldest entries dropped beyond the limit. Counts the
-- entries first (no table): under the limit, the common case, nothing is cut.
local function appended(h, attempt)
  if not h then return attempt end
  h = h .. '\n' .. attempt
  local entries, at = 1, 0
  while true do
    at = string.find(h, '\n', at + 1, true)
    if not at then break end
    entries = entries + 1
  end
  local over = entries - limit
  if over <= 0 then return h end
  at = 0
  for _ = 1, over do at = string.find(h, '\n', at + 1, true) end
  return string.sub(h, at + 1)
end

-- One status: 1 written, 0 stale.
local function write(data, stamp, attempt, state, id)
  local key = status_prefix .. id .. suffix
  -- The history only when there is an attempt to append: a reply's table grows per element.
  local cur
  if attempt ~= '' then
    cur = redis.call('HMGET', key, 'ts', 'ix', 'ixp', 'hs', 'h')
  else
    cur = redis.call('HMGET', key, 'ts', 'ix', 'ixp', 'hs')
  end
  local ts, ix, ixp, hs = cur[1] or nil, cur[2] or nil, cur[3] or nil, cur[4] or nil
  -- Written by the old layout (or after it): a history list may exist.
  local legacy = ts and hs ~= ts
  local written = 0
  nf = 0
  if not ts or is_newer(stamp, ts) then
    if state == '*' then data, state = merged(redis.call('HGET', key, 'data') or nil, data) end
    fields[1], fields[2], fields[3], fields[4], fields[5], fields[6] = 'data', data, 'ts', stamp, 'hs', legacy and '-' or stamp
    nf = 6
    written = 1
  else
    -- Stale: the stored status stays, and decides the index (a rare path: decode it).
    state = nil
    local ok, stored = pcall(cjson.decode, redis.call('HGET', key, 'data') or '')
    if ok and type(stored) == 'table' then state = stored.state end
  end
  if attempt ~= '' then
    fields[nf + 1], fields[nf + 2] = 'h', appended(cur[5] or nil, attempt)
    nf = nf + 2
  end
  if type(state) == 'string' and state ~= '' then
    if repeats then
      if seen[id] then apply_changes() end
      seen[id] = true
    end
    index(id, state, ix, ixp)
  end
  if nf > 0 then redis.call('HSET', key, unpack(fields, 1, nf)) end
  redis.call('PEXPIRE', key, ttl)
  if legacy then redis.call('PEXPIRE', history_prefix .. id .. suffix, ttl) end
  return written
end

local out = {}
local b = 7
while b <= #ARGV do
  cfg, ep, prefix = ARGV[b], ARGV[b + 1], ARGV[b + 2]
  if cfg == '' then cfg = nil end
  local with, without = tonumber(ARGV[b + 3]), tonumber(ARGV[b + 4])
  local a = b + 5
  for _ = 1, with do
    out[#out + 1] = write(ARGV[a], ARGV[a + 1], ARGV[a + 4], ARGV[a + 2], ARGV[a + 3])
    a = a + 5
  end
  for _ = 1, without do
    out[#out + 1] = write(ARGV[a], ARGV[a + 1], '', ARGV[a + 2], ARGV[a + 3])
    a = a + 4
  end
  b = a
end

-- Then each index added to is trimmed once.
apply_changes()
for key in pairs(added) do redis.call('ZREMRANGEBYLEX', key, '-', floor) end
return out
