import { errorMessage } from '../errors/errors';
import { retryUntil } from '../domain/retry-until';
import type { BatchHandler, Log, LogConsumer } from '../ports/log';
import { createDeliverer, type DeliverDeps, type Deliverer } from './deliver';
import { createOriginSlots } from './origin-slots';
import { createEndpointPacer } from './pacer';
import { committedStage } from './stage-marks';

export type WorkerDeps = DeliverDeps & { logStore: Log };

/**
 * Starts a consumer, again and again with backoff while the log is away: a broker gone while
 * the process starts (a restart, an outage that began during a slow rebuild) must not end the
 * worker, which would leave its partitions to nobody until something restarts it.
 */
const runUntilStarted = async (c: LogConsumer, handler: BatchHandler, log: WorkerDeps['log']): Promise<void> => {
  await retryUntil(() => c.run(handler), {
    baseMs: 500,
    capMs: 5000,
    onRetry: (e, wait) => log.warn('consumer could not start; trying again', { error: errorMessage(e), in_ms: wait }),
  });
};

/**
 * The worker's consumers: the fast lane (pending topic) and the slow lane (penalty box,
 * each endpoint paced at its limit / latency, at most concurrency.slow_lane_rate per worker,
 * in its own consumer group so that it never takes the fast lane's fetch slots). Both share
 * the worker's connection slots per origin. Batches are pipelined (core/ports/log.ts): a
 * batch's deliveries start as soon as it is fetched, and offsets are committed in order once
 * every batch up to them has resolved.
 */
export const startWorker = async (d: WorkerDeps): Promise<{ consumers: LogConsumer[]; stop: () => Promise<void> }> => {
  const { kafka, worker, concurrency } = d.config;
  const consumers: LogConsumer[] = [];
  const deliverers: Deliverer[] = [];
  const slots = d.slots ?? createOriginSlots(d.config.delivery.max_conns_per_host, concurrency.initial_limit);
  const onCommitted = committedStage(d.stages);
  const startLane = async (groupId: string, topic: string, deliver: Deliverer): Promise<void> => {
    const c = d.logStore.consumer({
      groupId,
      topics: [topic],
      fromBeginning: true,
      maxUnresolved: kafka.max_unresolved,
      maxBatchesInFlight: kafka.max_batches_in_flight || undefined,
      commitIntervalMs: kafka.commit_interval,
      onCommitted,
    });
    await runUntilStarted(c, deliver, d.log);
    consumers.push(c);
    deliverers.push(deliver);
  };
  if (worker.lanes !== 'slow') await startLane(kafka.consumer_group, kafka.topics.pending, createDeliverer({ ...d, slots }, 'fast'));
  if (worker.lanes !== 'fast')
    await startLane(`${kafka.consumer_group}-slow`, kafka.topics.slow, createDeliverer({ ...d, slots, pacer: createEndpointPacer(concurrency.slow_lane_rate, d.clock) }, 'slow'));
  return {
    consumers,
    stop: async () => {
      await Promise.all(consumers.map((c) => c.stop()));
      await Promise.all(deliverers.map((x) => x.drain()));
    },
  };
};
