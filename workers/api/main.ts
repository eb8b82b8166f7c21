import { serve } from '@hono/node-server';
import { createApiApp } from '../../core/http/app';
import { createEnqueuer } from '../../core/pipeline/enqueue';
import { createLogger } from '../../core/pipeline/logger';
import { topicSpecs } from '../../core/pipeline/topics';
import { systemClock } from '../../core/ports/clock';
import { batchingProducer, kafkaLogFrom, redisHotFrom, secretBoxFrom } from '../node/adapters';
import { configFromProcess, parseFlags, redisUrlOf } from '../node/config';
import { onShutdown } from '../node/lifecycle';

const flags = parseFlags(process.argv.slice(2));
const config = configFromProcess(flags);
const log = createLogger('howk-api', config.log.level);
const kafka = kafkaLogFrom(config, 'api');
const hot = redisHotFrom(config, redisUrlOf(config));

await kafka.admin.ensureTopics(topicSpecs(config)).catch((e) => log.warn('could not ensure topics at start-up; enqueues answer 503 until Kafka is reachable', { error: String(e) }));
const producer = batchingProducer(kafka.producer(), config.api.produce_linger);
const enqueue = createEnqueuer({ config, producer, hot, clock: systemClock, secretBox: await secretBoxFrom(config), log });
const app = createApiApp({
  config,
  enqueue,
  hot,
  log,
  clock: systemClock,
  dependencies: [
    { name: 'kafka', check: () => kafka.admin.ping() },
    { name: 'redis', check: () => hot.ping() },
  ],
});
const server = serve({ fetch: app.fetch, port: config.api.port, hostname: config.api.host }, (info) =>
  log.info('howk-api listening', { port: info.port, brokers: config.kafka.brokers }),
);
onShutdown(log, async () => {
  await new Promise<void>((r) => server.close(() => r()));
  await producer.close();
  await kafka.close();
  await hot.close();
});
