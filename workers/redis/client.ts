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
  /**
   * Merges single commands issued in the same tick into one write. Off by default: the
   * hot state already sends explicit pipelines/scripts, and it measured no gain for them.
   */
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
    enableAutoPipelining: opts.autoPipelining ?? false,
    maxRetriesPerRequest: opts.maxRetriesPerRequest ?? 1,
    commandTimeout: opts.commandTimeoutMs ?? 5_000,
    connectTimeout: opts.connectTimeoutMs ?? 2_000,
    // Reconnect forever, at most 500 ms apart: a queued command is rejected when the next
    // attempt fails, so this cap bounds how long a call waits during an outage.
    retryStrategy: (times) => Math.min(times * 50, 500),
    ...(opts.connectionName ? { connectionName: opts.connectionName } : {}),
  });
  if (opts.onError) redis.on('error', opts.onError);
  return redis;
};
