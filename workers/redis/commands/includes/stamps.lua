-- stamps: comparison of updated_at_ns stamps, included by writeStatuses.lua and
-- restoreState-3.lua with `--#include stamps`.
-- KEYS: none. ARGV: none.
-- Returns a table of functions: is_newer(a, b), true when stamp a is newer than stamp b
-- (b may be nil: nothing stored).
-- Stamps are compared as decimal text: Lua numbers are doubles, which cannot tell apart
-- stamps ~1e18 that differ by less than 256 ns. Byte by byte rather than `>`, because Lua's
-- string `<` goes through strcoll and the server's locale.
local M = {}

function M.is_newer(a, b)
  if not b then return true end
  if #a ~= #b then return #a > #b end
  for i = 1, #a do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x > y end
  end
  return false
end

return M
