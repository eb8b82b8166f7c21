-- putDeadLetter: stores a webhook's latest dead letter and indexes it for listing, in one run
-- (the two scripts it includes; a Redis Cluster runs them apart: the keys are two slots').
--
-- KEYS[1]  dead-letter hash (keys.deadLetter(id)): `data` (raw record), `at` (dead_at ms),
--          `member` (its index member), `rix` (the reason index it is in)
-- KEYS[2]  config index (keys.deadLetterIndex(config))
-- KEYS[3]  reason index (keys.deadLetterReasonIndex(config, reason_type))
-- ARGV[1]  index member: 13-digit dead_at ms .. ':' .. webhook id (time order = lexicographic order)
-- ARGV[2]  the raw dead-letter record
-- ARGV[3]  dead_at (ms)
-- ARGV[4]  TTL (ms) of the hash
-- ARGV[5]  trim floor: index members lexicographically below it have expired and are dropped
--
-- Returns 1 when stored, 0 when a dead letter of this webhook with the same or a later
-- dead_at is stored (a redelivered batch dead-letters again: listed once). A webhook that
-- dies again after a retry moves to its new place in the indexes.

--#include storeDeadLetter
--#include indexDeadLetter

local prev = storeDeadLetter({KEYS[1]}, {ARGV[1], ARGV[2], ARGV[3], ARGV[4], KEYS[3]})
if prev == 0 then return 0 end
indexDeadLetter({KEYS[2], KEYS[3]}, {ARGV[1], ARGV[5], prev[1], prev[2]})
return 1
