// Keys that were accepted once and did nothing. A file or variable that still sets one is
// refused with the reason, instead of being read as if it tuned something.
export const REMOVED_KEYS: Record<string, string> = {
  'redis.pool_size': 'removed: each howk process talks to Redis over one pipelined connection (ioredis), so there is no pool to size; delete the setting',
  'delivery.max_idle_conns':
    'removed: the delivery pool keeps at most delivery.max_conns_per_host connections per origin and closes idle ones after their keep-alive timeout; there is no separate idle cap, so set delivery.max_conns_per_host instead',
};
