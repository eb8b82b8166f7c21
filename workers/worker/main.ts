import { createLogger } from '../../core/pipeline/logger';
import { topicSpecs } from '../../core/pipeline/topics';
import { startWorker } from '../../core/pipeline/worker';
import { systemClock } from '../../core/ports/clock';
import { kafkaLogFrom, redisHotFrom, secretBoxFrom } from '../node/adapters';
import { configFromProcess, parseFlags, redisUrlOf } from '../node/config';
import { onShutdown } from '../node/lifecycle';
import { createDrySender, createHttpSender } from '../node/sender';

const flags = parseFlags(process.argv.slice(2));
const config = configFromProcess(flags);
const log = createLogger('howk-worker', config.log.level);
const kafka = kafkaLogFrom(config, 'worker', config.kafka.partitions);
const hot = redisHotFrom(config, redisUrlOf(config));
const sender = config.worker.dry_run
  ? createDrySender((r) => log.info('DRY: would deliver', { endpoint: r.url, payload_bytes: r.body.length }))
  : createHttpSender({ connectionsPerOrigin: config.delivery.max_conns_per_host, snippetBytes: config.delivery.response_snippet_bytes });

await kafka.admin.ensureTopics(topicSpecs(config));
const worker = await startWorker({ config, logStore: kafka, producer: kafka.producer(), hot, sender, clock: systemClock, log, secretBox: await secretBoxFrom(config) });
log.info('howk-worker consuming', { topic: config.kafka.topics.pending, group: config.kafka.consumer_group });
onShutdown(log, async () => {
  await worker.stop();
  await kafka.close();
  await sender.close();
  await hot.close();
});
