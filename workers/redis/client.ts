import { Redis } from 'ioredis';

export type RedisClientOptions = {
  /** Per-command deadline; a stuck Redis then fails calls instead of hanging them. */
  commandTimeoutMs?: number;
  connectTimeoutMs?: number;
  /**
   * How many reconnect attempts a queued command waits through before it is rejected.
   * Small, so callers see an outage at once and fall back (circuits fail closed, etc.).
   */
  maxRetriesPerRequest?: number;
  /** Merges commands issued in the same tick into one write (helps many concurrent small calls). */
  autoPipelining?: boolean;
  /** Overrides the db of the URL (tests keep their files apart this way). */
  db?: number;
  connectionName?: string;
  /** Connection errors; without a listener ioredis prints them itself. */
  onError?: (err: Error) => void;
};

export const createRedis = (url: string, opts: RedisClientOptions = {}): Redis => {
  const target = new URL(url);
  if (opts.db !== undefined) target.pathname = `/${opts.db}`;
  const redis = new Redis(target.toString(), {
    lazyConnect: false,
    enableAutoPipelining: opts.autoPipelining ?? true,
    maxRetriesPerRequest: opts.maxRetriesPerRequest ?? 1,
    commandTimeout: opts.commandTimeoutMs ?? 5_000,
    connectTimeout: opts.connectTimeoutMs ?? 5_000,
    // Keep reconnecting for as long as the process lives; requests fail fast meanwhile.
    retryStrategy: (times) => Math.min(times * 100, 2_000),
    ...(opts.connectionName ? { connectionName: opts.connectionName } : {}),
  });
  if (opts.onError) redis.on('error', opts.onError);
  return redis;
};
