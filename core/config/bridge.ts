import { duration, int, list, optStr, section, str } from './fields';

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
  topics: list([], 'Topics the edge may produce to (empty: the pending and slow topics)'),
  produce_timeout: duration('1200ms', 'Longest wait for Kafka acks before answering 503 (keep it under edge.produce_deadline)'),
  max_request_size: int(8 * 1_048_576, 'Largest request body in bytes', { min: 1024 }),
  redis_commands: list(
    ['ping', 'echo', 'get', 'mget', 'set', 'del', 'exists', 'expire', 'pexpire', 'ttl', 'pttl', 'incr', 'incrby', 'decr', 'hget', 'hmget', 'hgetall', 'lrange', 'llen', 'pfcount'],
    'Redis commands the edge may run (lower case)',
  ),
});
