import type { Config } from '../../core/config/schema';
import { batchingProducer } from '../../core/pipeline/batching-producer';
import { createLogger } from '../../core/ports/logger';
import { secretBoxFromConfig } from '../../core/signing/secret-box';
import { KafkaLog } from '../kafka/log';
import { createRedis } from '../redis/client';
import { redisKv } from '../redis/lua-kv';
import { redisInboundReplays } from '../redis/inbound-replays';
import { createKeyMirror } from '../redis/key-mirror';
import { RedisGuards } from '../redis/guards';
import { RedisHotState } from '../redis/hot-state';
import { redisEndedLookup } from '../redis/ended-lookup';
import { redisOutcomeBus } from '../redis/outcome-bus';

export const kafkaLogFrom = (c: Config, clientSuffix: string, partitionsConsumedConcurrently?: number, onError?: (op: string) => void) =>
  new KafkaLog({
    brokers: c.kafka.brokers,
    clientId: `${c.kafka.client_id}-${clientSuffix}`,
    produceTimeoutMs: c.kafka.produce_timeout,
    maxWaitMs: c.kafka.max_wait,
    minBytes: c.kafka.fetch_min_bytes,
    maxBytesPerPartition: c.kafka.max_batch_bytes,
    sessionTimeoutMs: c.kafka.session_timeout,
    rebalanceTimeoutMs: c.kafka.rebalance_timeout,
    idempotent: c.kafka.idempotent_producer,
    partitionsConsumedConcurrently,
    log: createLogger(`${c.kafka.client_id}-${clientSuffix}`, c.log.level),
    onError,
  });

/** Hot state, guards and the outcome bus over one Redis connection (closing the hot state closes it; the bus subscribes on a second one). */
export const redisHotFrom = (c: Config, url: string, onError?: (op: string) => void) => {
  const redis = createRedis(url, { commandTimeoutMs: c.redis.command_timeout, clusterNodes: c.redis.cluster_nodes, ...(onError ? { onError: () => onError('connection') } : {}) });
  const hot = new RedisHotState(redis, { status_ttl: c.ttl.status_ttl, stats_ttl: c.ttl.stats_ttl, retry_data_ttl: c.ttl.retry_data_ttl, retry_shards: c.redis.retry_shards });
  const ended = redisEndedLookup(redis, c.ttl.status_ttl);
  return Object.assign(hot, {
    guards: new RedisGuards(redis, undefined, ended.riding),
    luaKv: redisKv(redis),
    inboundReplays: redisInboundReplays(redis),
    outcomes: redisOutcomeBus(redis),
    keyMirror: createKeyMirror(redis),
    ended,
  });
};

export const secretBoxFrom = (c: Config) => secretBoxFromConfig(c.signing);

export { batchingProducer };
