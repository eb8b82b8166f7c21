import { EDGE_REDIS_COMMANDS } from '../policy/edge-redis-access';
import { duration, int, list, num, optStr, section, str } from './fields';

/**
 * `bridge.*`: how howk-bridge faces the edge (docs/EDGE.md). Its Kafka brokers, Redis and
 * topic names are the shared kafka.* and redis.* settings.
 */
export const bridgeSection = section({
  port: int(8090, 'HTTP port of howk-bridge', { max: 65535 }),
  host: str('127.0.0.1', 'Interface howk-bridge binds to'),
  kafka_username: str('howk', 'Basic-auth user of the Upstash Kafka dialect (/kafka)'),
  kafka_password: optStr('Basic-auth password of /kafka (howk-bridge refuses to start without it)', { secret: true }),
  redis_token: optStr('Bearer token of the Upstash Redis dialect (/redis) (howk-bridge refuses to start without it)', { secret: true }),
  topics: list([], 'Topics the edge may produce to (empty: the pending, slow and state topics; state carries the snapshots of webhooks parked at the edge)'),
  produce_timeout: duration('1200ms', 'Longest wait for Kafka acks before answering 503 (keep it under edge.produce_deadline)'),
  max_request_size: int(8 * 1_048_576, 'Largest request body in bytes', { min: 1024 }),
  redis_commands: list(
    [...EDGE_REDIS_COMMANDS],
    'Redis commands the edge may run (lower case); each runs only on the keys the edge needs (core/policy/edge-redis-access.ts), whatever this list says',
  ),
  redis_max_request_size: int(1_048_576, 'Largest /redis request body in bytes', { min: 1024 }),
  redis_max_commands: int(1000, 'Most commands in one /redis pipeline or transaction', { min: 1 }),
  rate_limit: num(2000, 'Requests per second each route (/kafka, /redis) takes from all callers together; over it: 429 + Retry-After (0 = no limit)'),
  rate_burst: int(4000, 'Requests each route takes at once after being idle', { min: 1 }),
});
