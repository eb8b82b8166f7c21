import { clusterKeys, keys, type RedisKeys } from '../core/domain/keys';
import { loadConfig } from '../core/config/load';
import type { Config } from '../core/config/schema';
import { ValidationError } from '../core/errors/errors';
import type { Redis } from '@upstash/redis/cloudflare';
import type { RestProducerOptions } from './upstash/kafka';
import { createEdgeRedis } from './upstash/redis';

// The edge reads the one config (core/config) from its Worker vars and secrets, as howk-api
// reads its environment: the shared HOWK_* settings (topics, limits, TTLs) and edge.*
// (HOWK_EDGE_*, docs/EDGE.md). Secrets (passwords, tokens, keys) are Worker secrets.

export type EdgeSettings = Config['edge'];
export type EdgeConfig = { config: Config; edge: EdgeSettings };

/** Worker bindings that are settings: vars are strings (a TOML number or boolean var is read as its text). */
const settingBindings = (env: Record<string, unknown>): Record<string, string> => {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) {
    if (typeof v === 'string') out[k] = v;
    else if (typeof v === 'number' || typeof v === 'boolean') out[k] = String(v);
  }
  return out;
};

/**
 * Worker env (vars + secrets) → the config, edge.* included. `otherEnv`: the Worker secrets
 * the bundled transformers name, which are not settings whatever their names.
 */
export const edgeConfigFrom = (env: Record<string, unknown>, otherEnv: readonly string[] = []): EdgeConfig => {
  const config = loadConfig({ env: settingBindings(env), otherEnv });
  const edge = config.edge;
  if (!edge.kafka_rest_url)
    throw new ValidationError('edge.kafka_rest_url (HOWK_EDGE_KAFKA_REST_URL, formerly HOWK_KAFKA_REST_URL) is required at the edge', 'edge.kafka_rest_url');
  if (!edge.kafka_rest_password)
    throw new ValidationError('edge.kafka_rest_password (HOWK_EDGE_KAFKA_REST_PASSWORD, formerly HOWK_KAFKA_REST_PASSWORD) is required at the edge', 'edge.kafka_rest_password');
  if (edge.bridge_headers !== undefined) {
    const h = (() => {
      try {
        return JSON.parse(edge.bridge_headers) as unknown;
      } catch {
        return undefined;
      }
    })();
    if (!h || typeof h !== 'object' || Array.isArray(h) || Object.values(h).some((v) => typeof v !== 'string'))
      throw new ValidationError('edge.bridge_headers (HOWK_EDGE_BRIDGE_HEADERS) must be a JSON object of strings', 'edge.bridge_headers');
  }
  if (edge.key_cache > 30_000) throw new ValidationError('edge.key_cache (HOWK_EDGE_KEY_CACHE) is at most 30s: a revoked key must stop working within it', 'edge.key_cache');
  return { config, edge };
};

/** edge.bridge_headers as a header map (checked when the config is read). */
const headersOf = (s: EdgeSettings): Record<string, string> => (s.bridge_headers ? (JSON.parse(s.bridge_headers) as Record<string, string>) : {});

/** The Kafka REST producer's options. */
export const kafkaRestOptions = (s: EdgeSettings): RestProducerOptions => ({
  url: s.kafka_rest_url,
  username: s.kafka_rest_username,
  password: s.kafka_rest_password!,
  deadlineMs: s.produce_deadline,
  retryAfterSec: s.retry_after,
  headers: headersOf(s),
});

/** The Redis REST client, when its endpoint and token are set. */
export const edgeRedisOf = (s: EdgeSettings): Redis | undefined =>
  s.redis_rest_url && s.redis_rest_token ? createEdgeRedis({ url: s.redis_rest_url, token: s.redis_rest_token, timeoutMs: s.produce_deadline, headers: headersOf(s) }) : undefined;

/** Admission of one destination host. */
export const admissionOf = (s: EdgeSettings, host: string): { rate: number; burst: number } => s.domain_rates[host] ?? { rate: s.admission_rate, burst: s.admission_burst };

/**
 * The fleet's key layout for the Redis behind the bridge: on a Redis Cluster the hash-tagged
 * names the fleet's hot state and guards use (core/domain/keys.ts clusterKeys), else the
 * single-Redis ones. An edge on the wrong layout reads and writes keys the fleet never sees.
 */
export const edgeKeysOf = (config: Config): RedisKeys => (config.edge.redis_cluster || config.redis.cluster_nodes.length > 0 ? clusterKeys : keys);
