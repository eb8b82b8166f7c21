import type { Config } from '../../core/config/schema';
import { createLogger } from '../../core/ports/logger';
import { kafkaLogFrom, redisHotFrom, secretBoxFrom } from './adapters';
import { configFromProcess, parseFlags, redisUrlOf } from './config';
import { fleetMetrics, startFleet } from './fleet';
import { onRedisFailure } from '../redis/exec';
import { onReload, onShutdown } from './lifecycle';
import { senderFrom } from './sender';

export type Role = 'api' | 'worker' | 'scheduler';

/** The production binaries: one role each, on Kafka + Redis. */
export const runRole = async (role: Role, configure: (c: Config) => void = () => {}): Promise<void> => {
  const config = configFromProcess(parseFlags(process.argv.slice(2)));
  configure(config);
  const log = createLogger(`howk-${role}`, config.log.level);
  const metrics = fleetMetrics(config, { api: role === 'api', worker: role === 'worker' });
  const { kafkaError, redisError } = metrics.pipeline;
  onRedisFailure(redisError);
  const logStore = kafkaLogFrom(config, role, role === 'worker' ? config.kafka.partitions : undefined, kafkaError);
  const hot = redisHotFrom(config, redisUrlOf(config), redisError);
  const sender = senderFrom(config, log);
  const fleet = await startFleet({
    config,
    logStore,
    hot,
    sender,
    log,
    guards: hot.guards,
    luaKv: hot.luaKv,
    inboundReplays: hot.inboundReplays,
    outcomes: hot.outcomes,
    ended: hot.ended,
    ...(role === 'api' ? { keyMirror: hot.keyMirror } : {}),
    secretBox: await secretBoxFrom(config),
    roles: { api: role === 'api', worker: role === 'worker', scheduler: role === 'scheduler' },
    names: { log: 'kafka', hot: 'redis' },
    metrics,
  });
  log.info(`howk-${role} started`, {
    ...(fleet.baseUrl ? { url: fleet.baseUrl } : {}),
    brokers: config.kafka.brokers,
    group: role === 'worker' ? config.kafka.consumer_group : undefined,
  });
  if (fleet.transformers) onReload(log, fleet.transformers.reload);
  onShutdown(log, async () => {
    await fleet.stop();
    await logStore.close();
    await sender.close();
    await hot.outcomes.close();
    await hot.close();
  });
};
