import { Redis } from '@upstash/redis/cloudflare';
import { keys as singleKeys, type RedisKeys } from '../../core/domain/keys';
import type { WebhookStatus, WebhookStatusView } from '../../core/domain/status';
import { HISTORY_FIELD, historyOf } from '../../core/domain/status-history';
import { hourBucket } from '../../core/domain/time';
import { HowkError, NotConfiguredError, UnavailableError, errorMessage } from '../../core/errors/errors';
import { STAT_NAMES, type HotConnection, type StatsReader, type StatsWindow, type StatusReader } from '../../core/ports/hot-state';

// Hot-state reads at the edge over the Upstash Redis REST dialect (howk-bridge in front of
// the real Redis): the same keys and shapes as workers/redis/hot-state.ts, one round trip
// (a pipeline) per call. The edge writes no status: of the HotState roles it implements the
// two its routes read (status, stats) and ping for its health check. `keys` is the fleet's
// layout (edge/config.ts edgeKeysOf): on a Redis Cluster each call's keys share a slot (a
// webhook's status and history `{<id>}`, the counters `{stats}`), so the bridge runs each
// MGET and PFCOUNT on one node.

const HOUR_MS = 3_600_000;

export type EdgeRedisOptions = { url: string; token: string; timeoutMs: number; /** sent with every request */ headers?: Record<string, string> };

export const createEdgeRedis = (o: EdgeRedisOptions): Redis => {
  const redis = new Redis({
    url: o.url,
    token: o.token,
    automaticDeserialization: false,
    enableTelemetry: false,
    // One quick retry of a network failure, and never longer than the deadline in all.
    retry: { retries: 1, backoff: () => 50 },
    signal: () => AbortSignal.timeout(o.timeoutMs),
  });
  if (o.headers && Object.keys(o.headers).length) {
    // The Cloudflare build's constructor passes only its authorization header to its HTTP
    // client; the client sends whatever its `headers` hold with every request.
    const http = (redis as unknown as { client?: { headers?: Record<string, string> } }).client;
    if (!http?.headers) throw new Error('@upstash/redis has no internal HTTP client headers: the pinned version is required for edge.bridge_headers');
    http.headers = { ...http.headers, ...o.headers };
  }
  return redis;
};

const unavailable = (e: unknown) => (e instanceof HowkError ? e : new UnavailableError(`redis REST: ${errorMessage(e)}`, 2));

export type EdgeHotReads = StatusReader & StatsReader & Pick<HotConnection, 'ping'>;

/** Reads over REST; without a Redis REST endpoint they answer NotConfiguredError (501). */
export const edgeHotState = (client: Redis | undefined, keys: RedisKeys = singleKeys): EdgeHotReads => {
  const need = (): Redis => {
    if (!client) throw new NotConfiguredError('edge.redis_rest_url and edge.redis_rest_token (HOWK_EDGE_REDIS_REST_URL, HOWK_EDGE_REDIS_REST_TOKEN) are not set at the edge');
    return client;
  };
  return {
    async getStatus(id: string): Promise<WebhookStatusView | null> {
      const redis = need();
      try {
        // Raw replies (automaticDeserialization off): HMGET answers its values in field order.
        const [fields, list] = await redis
          .pipeline()
          .hmget(keys.status(id), 'data', HISTORY_FIELD)
          .lrange<string>(keys.statusHistory(id), 0, -1)
          .exec<[[string | null, string | null] | null, string[]]>();
        const [data, field] = fields ?? [null, null];
        if (data === null) return null;
        return { ...(JSON.parse(data) as WebhookStatus), history: historyOf(list, field) };
      } catch (e) {
        throw unavailable(e);
      }
    },
    async stats(now: number, hours: number): Promise<StatsWindow> {
      const out = Object.fromEntries(STAT_NAMES.map((n) => [n, 0])) as StatsWindow;
      out.unique_endpoints = 0;
      if (hours <= 0) return out;
      const buckets = Array.from({ length: hours }, (_, h) => hourBucket(now - h * HOUR_MS));
      const redis = need();
      try {
        const [counts, unique] = await redis
          .pipeline()
          .mget<(string | null)[]>(...buckets.flatMap((b) => STAT_NAMES.map((n) => keys.stats(n, b))))
          .pfcount(...(buckets.map(keys.endpointsHll) as [string, ...string[]]))
          .exec<[(string | null)[], number]>();
        counts.forEach((v, i) => {
          out[STAT_NAMES[i % STAT_NAMES.length]!] += v === null ? 0 : Number(v);
        });
        out.unique_endpoints = unique;
        return out;
      } catch (e) {
        throw unavailable(e);
      }
    },
    async ping() {
      const redis = need();
      try {
        await redis.ping();
      } catch (e) {
        throw unavailable(e);
      }
    },
  };
};
