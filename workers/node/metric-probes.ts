import type { Config } from '../../core/config/schema';
import type { RetrySchedule } from '../../core/ports/hot-state';
import type { Log } from '../../core/ports/log';
import { laneGroups, laneLagReader, totalLag } from './group-lag';
import type { PipelineMetrics } from './pipeline-metrics';

/**
 * The gauges read from the log and Redis at scrape time: consumer lag per partition and the
 * slow lane's depth (worker), the retry schedule's depth (worker, scheduler). A log that
 * cannot tell its lag shows none (howk-dev's memory and SQLite logs can).
 */
export const registerProbes = (m: PipelineMetrics, config: Config, parts: { logStore: Log; hot: RetrySchedule; worker: boolean }): void => {
  const lag = laneLagReader(config.kafka, parts.logStore);
  if (parts.worker && lag) {
    const groups = laneGroups(config.kafka);
    m.probe('howk_consumer_lag', 'Records on a partition after the consumer group committed offset (group, topic, partition)', async () => {
      const all = await Promise.all((['fast', 'slow'] as const).map(async (lane) => (await lag(lane)).map((p) => ({ ...p, group: groups[lane].group }))));
      return all.flat().map((p) => ({ metricName: 'howk_consumer_lag', labels: { group: p.group, topic: p.topic, partition: p.partition }, value: p.lag }));
    });
    m.probe('howk_slow_lane_depth', 'Webhooks waiting on the slow-lane topic (the slow consumer group lag, all partitions)', async () => [
      { metricName: 'howk_slow_lane_depth', labels: {}, value: totalLag(await lag('slow')) },
    ]);
  }
  m.probe('howk_retry_schedule_depth', 'Webhooks in the retry schedule (retries, parked and leased webhooks) in Redis', async () => [
    { metricName: 'howk_retry_schedule_depth', labels: {}, value: await parts.hot.retryCount() },
  ]);
};
