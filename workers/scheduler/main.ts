import { createLogger } from '../../core/pipeline/logger';
import { runScheduler } from '../../core/pipeline/scheduler';
import { topicSpecs } from '../../core/pipeline/topics';
import { systemClock } from '../../core/ports/clock';
import { kafkaLogFrom, redisHotFrom } from '../node/adapters';
import { configFromProcess, parseFlags, redisUrlOf } from '../node/config';
import { onShutdown } from '../node/lifecycle';

const flags = parseFlags(process.argv.slice(2));
const config = configFromProcess(flags);
const log = createLogger('howk-scheduler', config.log.level);
const kafka = kafkaLogFrom(config, 'scheduler');
const hot = redisHotFrom(config, redisUrlOf(config));
await kafka.admin.ensureTopics(topicSpecs(config));
const producer = kafka.producer();
const abort = new AbortController();
const loop = runScheduler({ config, hot, producer, clock: systemClock, log }, abort.signal);
log.info('howk-scheduler polling', { interval_ms: config.scheduler.poll_interval });
onShutdown(log, async () => {
  abort.abort();
  await loop;
  await kafka.close();
  await hot.close();
});
