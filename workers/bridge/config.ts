import { z } from 'zod';
import { duration, int, list, optStr, str } from '../../core/config/fields';
import { loadSettings } from '../../core/config/settings';
import type { Config } from '../../core/config/schema';
import { ValidationError } from '../../core/errors/errors';

// Settings of howk-bridge only (HOWK_BRIDGE_*). Kafka brokers, Redis and topic names come
// from the shared config (core/config); these say how the bridge faces the edge.
const shape = {
  port: int(8090, 'HTTP port of howk-bridge', { max: 65535 }),
  host: str('127.0.0.1', 'Interface howk-bridge binds to'),
  kafka_username: str('howk', 'Basic-auth user of the Upstash Kafka dialect (/kafka)'),
  kafka_password: optStr('Basic-auth password of /kafka (required)', { secret: true }),
  redis_token: optStr('Bearer token of the Upstash Redis dialect (/redis) (required)', { secret: true }),
  topics: list([], 'Topics the edge may produce to (default: the pending and slow topics)'),
  produce_timeout: duration('1200ms', 'Longest wait for Kafka acks before answering 503 (keep it under the edge produce_deadline)'),
  max_request_size: int(8 * 1_048_576, 'Largest request body in bytes', { min: 1024 }),
  redis_commands: list(
    ['ping', 'echo', 'get', 'mget', 'set', 'del', 'exists', 'expire', 'pexpire', 'ttl', 'pttl', 'incr', 'incrby', 'decr', 'hget', 'hmget', 'hgetall', 'lrange', 'llen', 'pfcount'],
    'Redis commands the edge may run (lower case)',
  ),
};

export type BridgeSettings = z.infer<z.ZodObject<typeof shape>>;

export const bridgeEnvName = (key: string): string => `HOWK_BRIDGE_${key.toUpperCase()}`;

/** Defaults < HOWK_BRIDGE_* env. Credentials are mandatory: the bridge never serves unauthenticated. */
export const loadBridgeSettings = (env: Record<string, string | undefined>, config: Config): BridgeSettings => {
  const s = loadSettings(shape, 'HOWK_BRIDGE_', env);
  if (!s.kafka_password) throw new ValidationError(`${bridgeEnvName('kafka_password')} is required`, 'kafka_password');
  if (!s.redis_token) throw new ValidationError(`${bridgeEnvName('redis_token')} is required`, 'redis_token');
  if (!s.topics.length) s.topics = [config.kafka.topics.pending, config.kafka.topics.slow];
  return s;
};
