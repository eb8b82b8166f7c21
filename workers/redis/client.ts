import { Cluster, Redis } from 'ioredis';

export type RedisClientOptions = {
  /** Per-command deadline; a stuck Redis then fails calls instead of hanging them. */
  commandTimeoutMs?: number;
  connectTimeoutMs?: number;
  /**
   * How many reconnect attempts a queued command waits through before it is rejected.
   * Small, so callers see an outage at once and fall back (circuits fail closed, etc.).
   */
  maxRetriesPerRequest?: number;
  /**
   * Merges single commands issued in the same tick into one write. Off by default: the
   * hot state already sends explicit pipelines/scripts, and it measured no gain for them.
   */
  autoPipelining?: boolean;
  /** Overrides the db of the URL (tests keep their files apart this way). Not on a cluster: it has db 0 only. */
  db?: number;
  connectionName?: string;
  /** Connection errors; without a listener ioredis prints them itself. */
  onError?: (err: Error) => void;
  /**
   * Seed nodes (host:port) of a Redis Cluster (redis.cluster_nodes). When given, the client is
   * an ioredis Cluster (the URL then only lends its password); else a single-node client.
   */
  clusterNodes?: readonly string[];
};

// Reconnect forever, at most 500 ms apart: a queued command is rejected when the next
// attempt fails, so this cap bounds how long a call waits during an outage.
const retryStrategy = (times: number) => Math.min(times * 50, 500);

/** host:port (an IPv6 host in brackets) as ioredis takes a cluster node. */
export const parseNode = (node: string): { host: string; port: number } => {
  const m = /^\[?([^\]]+?)\]?:(\d+)$/.exec(node.trim());
  if (!m) throw new Error(`redis.cluster_nodes: "${node}" is not host:port`);
  return { host: m[1]!, port: Number(m[2]) };
};

/**
 * A cluster client, typed as the single-node one: ioredis's Cluster answers the same commands,
 * pipelines and defineCommand scripts, and `isCluster` tells the two apart where they differ
 * (a pipeline spans one slot group, SCAN runs per master: workers/redis/slots.ts).
 */
const createCluster = (nodes: readonly string[], url: string, opts: RedisClientOptions): Redis => {
  const target = new URL(url);
  const password = target.password ? decodeURIComponent(target.password) : undefined;
  const username = target.username ? decodeURIComponent(target.username) : undefined;
  const cluster = new Cluster(nodes.map(parseNode), {
    enableAutoPipelining: opts.autoPipelining ?? false,
    clusterRetryStrategy: retryStrategy,
    // Reads go to masters: a replica's copy may lag the decision just written.
    scaleReads: 'master',
    redisOptions: {
      maxRetriesPerRequest: opts.maxRetriesPerRequest ?? 1,
      commandTimeout: opts.commandTimeoutMs ?? 5_000,
      connectTimeout: opts.connectTimeoutMs ?? 2_000,
      ...(password ? { password } : {}),
      ...(username ? { username } : {}),
      ...(opts.connectionName ? { connectionName: opts.connectionName } : {}),
    },
  });
  if (opts.onError) cluster.on('error', opts.onError);
  return cluster as unknown as Redis;
};

/** A client of a single Redis or of a Redis Cluster, as createRedis makes it: what hosts are handed, without importing the engine. */
export type RedisClient = Redis;

export const createRedis = (url: string, opts: RedisClientOptions = {}): Redis => {
  if (opts.clusterNodes?.length) return createCluster(opts.clusterNodes, url, opts);
  const target = new URL(url);
  if (opts.db !== undefined) target.pathname = `/${opts.db}`;
  const redis = new Redis(target.toString(), {
    lazyConnect: false,
    enableAutoPipelining: opts.autoPipelining ?? false,
    maxRetriesPerRequest: opts.maxRetriesPerRequest ?? 1,
    commandTimeout: opts.commandTimeoutMs ?? 5_000,
    connectTimeout: opts.connectTimeoutMs ?? 2_000,
    retryStrategy,
    ...(opts.connectionName ? { connectionName: opts.connectionName } : {}),
  });
  if (opts.onError) redis.on('error', opts.onError);
  return redis;
};
