-- renewLeases: pushes out the due time of retry entries that still carry our lease.
--
-- KEYS[1]  retry shard zset (keys.retryShard(shard of the ids))
-- ARGV[1], ARGV[2], ARGV[3], ...  triples: id, current leaseDueAt (ms), new leaseDueAt (ms)
--
-- Returns the number of leases renewed. An entry acked or re-scheduled meanwhile (absent,
-- or another score) is left alone, so a renewal never resurrects finished work.
local renewed = 0
for i = 1, #ARGV, 3 do
  local score = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if score and tonumber(score) == tonumber(ARGV[i + 1]) then
    redis.call('ZADD', KEYS[1], ARGV[i + 2], ARGV[i])
    renewed = renewed + 1
  end
end
return renewed
