import type { z } from 'zod';
import { duration, int, list, optStr, section, str } from './fields';

// The redis section, and the check of what Howk does not keep on a Redis Cluster
// (docs/ARCHITECTURE.md, "Redis Cluster: what stays atomic").

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

type Checked = {
  redis: { cluster_nodes: string[] };
  concurrency: { max_inflight_per_domain: number; domain_overrides: Record<string, number> };
};

/**
 * On a cluster the per-host in-flight limit is not kept (a host's leases and an endpoint's are
 * two slots): a configuration asking for it is refused rather than left unenforced.
 */
export const checkRedisCluster = (c: Checked, ctx: z.RefinementCtx): void => {
  if (!c.redis.cluster_nodes.length) return;
  const refuse = (path: string[], what: string) =>
    ctx.addIssue({ code: 'custom', path, message: `${what} is not kept on a Redis Cluster (redis.cluster_nodes is set): unset it or use one Redis instance` });
  if (c.concurrency.max_inflight_per_domain > 0) refuse(['concurrency', 'max_inflight_per_domain'], 'the per-host in-flight limit');
  if (Object.values(c.concurrency.domain_overrides).some((n) => n > 0)) refuse(['concurrency', 'domain_overrides'], 'the per-host in-flight limit');
};
