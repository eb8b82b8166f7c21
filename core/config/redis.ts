import { duration, int, list, optStr, section, str } from './fields';

// The redis section. On a Redis Cluster every guard is kept, the per-host in-flight limit in
// two steps (docs/ARCHITECTURE.md, "The per-host limit on a cluster: host first").

export const redisSection = section({
  addr: str('localhost:6379', 'Redis host:port'),
  url: optStr('Redis URL (redis://...), overrides addr/password/db', { env: 'HOWK_REDIS_URL' }),
  password: optStr('Redis password', { secret: true }),
  db: int(0, 'Redis database number'),
  command_timeout: duration('2s', 'Longest wait for a Redis reply before the operation fails'),
  retry_shards: int(
    16,
    'Shards of the retry schedule: each a sorted set of its own (on a Redis Cluster in a slot of its own), the webhook id picks the shard; schedulers split the shards between them under leases (docs/ARCHITECTURE.md, "The sharded retry schedule"). Fixed for the life of a Redis: every process must use the same number',
    { min: 1, max: 1024 },
  ),
  cluster_nodes: list(
    [],
    'Seed nodes (host:port, comma-separated in env) of a Redis Cluster: when set, every process opens Redis as a cluster client (password from url/password; addr and db are not used) and keeps its keys per slot (docs/ARCHITECTURE.md, "Redis Cluster: what stays atomic"); empty: one Redis instance',
  ),
});
