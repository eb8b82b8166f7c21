import type { Config } from '../../core/config/schema';
import { ValidationError } from '../../core/errors/errors';

// howk-bridge reads the one config (bridge.*, HOWK_BRIDGE_*); Kafka brokers, Redis and topic
// names are the shared kafka.* and redis.* settings.
export type BridgeSettings = Config['bridge'];

/** bridge.* with its topics filled in. Credentials are mandatory: the bridge never serves unauthenticated. */
export const bridgeSettings = (config: Config): BridgeSettings => {
  const s = config.bridge;
  if (!s.kafka_password) throw new ValidationError('bridge.kafka_password (HOWK_BRIDGE_KAFKA_PASSWORD) is required', 'bridge.kafka_password');
  if (!s.redis_token) throw new ValidationError('bridge.redis_token (HOWK_BRIDGE_REDIS_TOKEN) is required', 'bridge.redis_token');
  // Per-route credentials: one leaked secret must not open both dialects.
  if (s.redis_token === s.kafka_password) throw new ValidationError('bridge.redis_token must differ from bridge.kafka_password (one credential per route)', 'bridge.redis_token');
  return { ...s, topics: s.topics.length ? s.topics : [config.kafka.topics.pending, config.kafka.topics.slow, config.kafka.topics.state] };
};
