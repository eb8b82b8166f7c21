-- writeMarks: the sent marks no completion call took (workers/redis/riding-marks.ts), all those
-- waiting in one call.
--
-- KEYS: none (one Redis; a cluster writes its marks per slot, apart)
-- ARGV: a marks section (includes/sentMarks.lua): M, the status key prefix, its TTL ms, then
--   two per mark: webhook id, mark
-- Returns the number of marks written.

--#include sentMarks
sentMarks({}, ARGV)(1)
return tonumber(ARGV[1])
