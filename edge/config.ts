import { z } from 'zod';
import { duration, int, num, optStr, str } from '../core/config/fields';
import { loadConfig } from '../core/config/load';
import type { Config } from '../core/config/schema';
import { loadSettings } from '../core/config/settings';
import { ValidationError } from '../core/errors/errors';

// The edge reads the shared config from its Worker vars (HOWK_*: topics, limits, TTLs, as
// howk-api does) plus these edge settings (HOWK_EDGE_*, and the REST endpoints under
// HOWK_KAFKA_REST_* / HOWK_REDIS_REST_*, docs/EDGE.md). Secrets (passwords, tokens, keys)
// are Worker secrets.

const DomainRate = z.object({ rate: z.number().min(0), burst: z.number().int().min(1) });

const shape = {
  kafka_rest_url: str('', 'Upstash-dialect Kafka REST URL (howk-bridge: http://bridge/kafka)', { env: 'HOWK_KAFKA_REST_URL' }),
  kafka_rest_username: str('howk', 'Basic-auth user of the Kafka REST endpoint', { env: 'HOWK_KAFKA_REST_USERNAME' }),
  kafka_rest_password: optStr('Basic-auth password of the Kafka REST endpoint (Worker secret)', { env: 'HOWK_KAFKA_REST_PASSWORD', secret: true }),
  redis_rest_url: optStr('Upstash-dialect Redis REST URL (howk-bridge: http://bridge/redis)', { env: 'HOWK_REDIS_REST_URL' }),
  redis_rest_token: optStr('Bearer token of the Redis REST endpoint (Worker secret)', { env: 'HOWK_REDIS_REST_TOKEN', secret: true }),
  admission_rate: num(100, 'Webhooks per second a destination host takes on howk.pending; the overflow goes to howk.slow (0 = no limit)'),
  admission_burst: int(200, 'Webhooks a destination host takes at once on howk.pending after being idle', { min: 1 }),
  domain_rates: z
    .record(z.string(), DomainRate)
    .default({})
    .meta({ kind: 'map', description: 'Per-host admission, e.g. {"api.stripe.com": {"rate": 500, "burst": 1000}}' }),
  batch_max_records: int(500, 'A DomainGate flushes its produce buffer at this many records', { min: 1, max: 10_000 }),
  batch_linger: duration('5ms', 'Longest time a record waits in a DomainGate for others to share its produce'),
  produce_deadline: duration('1500ms', 'Time a produce may take, retries included, before the request answers 503'),
  retry_after: int(2, 'Retry-After (seconds) of a 503 when Kafka cannot be reached', { min: 1 }),
  lua_max_instructions: int(20_000_000, 'Lua VM instructions one transformer run may execute (workerd\'s clock stands still during a run, so this is its CPU limit)', { min: 10_000 }),
  api_keys: optStr('API key records (JSON array, hashes only) the edge accepts; unset with api.auth.enabled refuses every enqueue', { env: 'HOWK_EDGE_API_KEYS', secret: true }),
};

export type EdgeSettings = z.infer<z.ZodObject<typeof shape>>;
export type EdgeConfig = { config: Config; edge: EdgeSettings };

/** Worker env (vars + secrets) → the shared config and the edge settings. */
export const edgeConfigFrom = (env: Record<string, unknown>): EdgeConfig => {
  const strings = Object.fromEntries(Object.entries(env).filter(([, v]) => typeof v === 'string')) as Record<string, string>;
  const config = loadConfig({ env: strings });
  const edge = loadSettings(shape, 'HOWK_EDGE_', strings);
  if (!edge.kafka_rest_url) throw new ValidationError('HOWK_KAFKA_REST_URL is required at the edge', 'kafka_rest_url');
  if (!edge.kafka_rest_password) throw new ValidationError('HOWK_KAFKA_REST_PASSWORD is required at the edge', 'kafka_rest_password');
  return { config, edge };
};

/** Admission of one destination host. */
export const admissionOf = (s: EdgeSettings, host: string): { rate: number; burst: number } =>
  s.domain_rates[host] ?? { rate: s.admission_rate, burst: s.admission_burst };
