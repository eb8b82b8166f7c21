-- stamps: comparison of updated_at_ns stamps, included by writeStatuses.lua and
-- restoreState-5.lua with `--#include stamps`.
-- KEYS: none. ARGV: none.
-- Returns a table of functions: is_newer(a, b), true when stamp a is newer than stamp b
-- (b may be nil: nothing stored).
-- Stamps are compared as decimal text: Lua numbers are doubles, which cannot tell apart
-- stamps ~1e18 that differ by less than 256 ns; so they are compared in two parts of at most
-- 15 digits (exact as doubles). Not with string `<`: Lua's goes through strcoll and the
-- server's locale.
local M = {}

local function num(s, i, j) return tonumber(string.sub(s, i, j)) end

function M.is_newer(a, b)
  if not b then return true end
  local n = #a
  if n ~= #b then return n > #b end
  if a == b then return false end
  -- A double holds 15 decimal digits exactly: the head, then the last 15 digits, as numbers
  -- (a few calls rather than two per byte). Text that is not a number goes byte by byte.
  -- Heads equal as text (the usual case: stamps a few seconds apart) need no parse.
  local cut = n - 15
  if cut > 0 then
    local ha, hb = string.sub(a, 1, cut), string.sub(b, 1, cut)
    local x, y = true, true
    if ha ~= hb then
      x, y = tonumber(ha), tonumber(hb)
      if x and y and x ~= y then return x > y end
    end
    if x and y then
      local u, v = num(a, cut + 1, n), num(b, cut + 1, n)
      if u and v then return u > v end
    end
  else
    local u, v = tonumber(a), tonumber(b)
    if u and v then return u > v end
  end
  for i = 1, n do
    local p, q = string.byte(a, i), string.byte(b, i)
    if p ~= q then return p > q end
  end
  return false
end

return M
