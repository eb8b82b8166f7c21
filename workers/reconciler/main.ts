import { parseArgs } from 'node:util';
import { createLogger } from '../../core/ports/logger';
import { topicSpecs } from '../../core/pipeline/topics';
import { systemClock } from '../../core/ports/clock';
import { kafkaLogFrom, redisHotFrom } from '../node/adapters';
import { configFromProcess, redisUrlOf } from '../node/config';
import { onShutdown } from '../node/lifecycle';
import { createNodeMetrics } from '../node/metrics';
import { serveMetrics } from '../node/metrics-server';
import { embedReconciler } from '../node/reconciler';
import { onRedisFailure } from '../redis/exec';

// howk-reconciler: rebuilds Redis from Kafka (howk.state, howk.deadletter, howk.guards).
//   howk-reconciler            canary present → exit; missing → rebuild (or wait for the
//                              instance that is rebuilding), then exit 0
//   howk-reconciler --force    rebuild even though the canary is present (waits for the lock)
//   howk-reconciler --watch    after that, keep running the sentinel and the orphan sweep until SIGTERM (with
//                              /health, /ready and /metrics on metrics.port when it is set)
// Workers and schedulers embed the same code (workers/node/reconciler.ts); this binary is
// for a forced rebuild, or a deployment that wants the sentinel outside the workers.

const { values: flags } = parseArgs({
  args: process.argv.slice(2),
  options: { config: { type: 'string' }, force: { type: 'boolean' }, watch: { type: 'boolean' } },
  strict: true,
});
const config = configFromProcess({ config: flags.config });
const log = createLogger('howk-reconciler', config.log.level);
// Rebuilds, Kafka and Redis errors, and the process metrics on metrics.port (when set).
const metrics = createNodeMetrics([], { topEndpoints: config.metrics.top_endpoints });
onRedisFailure(metrics.pipeline.redisError);
const logStore = kafkaLogFrom(config, 'reconciler', undefined, metrics.pipeline.kafkaError);
const hot = redisHotFrom(config, redisUrlOf(config), metrics.pipeline.redisError);
// /health, /ready (the probes of a container or pod: Kafka and Redis answer) and /metrics.
const served =
  config.metrics.port > 0
    ? await serveMetrics(metrics, config.metrics.port, config.metrics.host, [
        { name: 'kafka', check: () => logStore.admin.ping() },
        { name: 'redis', check: () => hot.ping() },
      ])
    : undefined;
await logStore.admin.ensureTopics(topicSpecs(config));
const embedded = embedReconciler(
  { config, logStore, hot, log, clock: systemClock, guards: hot.guards, onRebuilt: metrics.pipeline.rebuilt, orphans: { onRepaired: metrics.pipeline.orphansRepaired } },
  'reconciler',
);
const close = async () => {
  await served?.close();
  await embedded.stop();
  await logStore.close();
  await hot.close();
};

if (flags.force) {
  const summary = await embedded.reconciler.forceRebuild();
  log.info('forced rebuild done', { restored: summary.state.restored, live: summary.state.live, dead_letters: summary.deadletters.indexed, ms: summary.ms });
} else {
  log.info('start-up check done', { outcome: await embedded.ready() });
}
if (flags.watch) {
  embedded.start();
  log.info('howk-reconciler watching the canary', { every_ms: config.reconciler.sentinel_interval, probes: served?.url });
  onShutdown(log, close);
} else {
  await close();
  process.exit(0);
}
