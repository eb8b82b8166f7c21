import { loadConfig } from '../core/config/load';
import type { Config } from '../core/config/schema';
import { ValidationError } from '../core/errors/errors';

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
  if (edge.key_cache > 30_000) throw new ValidationError('edge.key_cache (HOWK_EDGE_KEY_CACHE) is at most 30s: a revoked key must stop working within it', 'edge.key_cache');
  return { config, edge };
};

/** Admission of one destination host. */
export const admissionOf = (s: EdgeSettings, host: string): { rate: number; burst: number } => s.domain_rates[host] ?? { rate: s.admission_rate, burst: s.admission_burst };
