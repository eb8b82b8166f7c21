import { serve, type ServerType } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import { createLogger } from '../../core/ports/logger';
import { configFromProcess, parseFlags, redisUrlOf } from '../node/config';
import { onShutdown } from '../node/lifecycle';
import { createRedis } from '../redis/client';
import { createBridgeApp } from './app';
import { bridgeSettings } from './config';
import { newCounters } from './counters';
import { KafkaRestProducer } from '../kafka/rest-producer';

// howk-bridge: how a self-hosted Kafka + Redis sits behind the edge (docs/EDGE.md).
const config = configFromProcess(parseFlags(process.argv.slice(2)));
const settings = bridgeSettings(config);
const log = createLogger('howk-bridge', config.log.level);
const producer = new KafkaRestProducer({ brokers: config.kafka.brokers, clientId: `${config.kafka.client_id}-bridge`, produceTimeoutMs: settings.produce_timeout });
const redis = createRedis(redisUrlOf(config), {
  commandTimeoutMs: config.redis.command_timeout,
  clusterNodes: config.redis.cluster_nodes,
  connectionName: 'howk-bridge',
  onError: () => {},
});
const app = createBridgeApp({ settings, producer, redis, counters: newCounters(), log });
const server = await new Promise<ServerType>((resolve) => {
  const s = serve({ fetch: app.fetch, port: settings.port, hostname: settings.host }, () => resolve(s));
});
const port = (server.address() as AddressInfo).port;
log.info('howk-bridge started', {
  url: `http://${settings.host}:${port}`,
  kafka: `/kafka (Basic, topics: ${settings.topics.join(',')})`,
  redis: '/redis (Bearer)',
  brokers: config.kafka.brokers,
});
onShutdown(log, async () => {
  await new Promise<void>((r) => server.close(() => r()));
  await producer.close();
  await redis.quit().catch(() => redis.disconnect());
});
