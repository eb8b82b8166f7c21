import type { Log, LogConsumer } from '../ports/log';
import { createDeliverer, type DeliverDeps } from './deliver';
import { createPacer } from './pacer';

export type WorkerDeps = DeliverDeps & { logStore: Log };

/**
 * The worker's consumers: the fast lane (pending topic) and the slow lane (penalty box,
 * paced at concurrency.slow_lane_rate per worker, in its own consumer group so that it
 * never takes the fast lane's fetch slots). Offsets are committed per batch after it resolves.
 */
export const startWorker = async (d: WorkerDeps): Promise<{ consumers: LogConsumer[]; stop: () => Promise<void> }> => {
  const { kafka, worker, concurrency } = d.config;
  const consumers: LogConsumer[] = [];
  if (worker.lanes !== 'slow') {
    const fast = d.logStore.consumer({ groupId: kafka.consumer_group, topics: [kafka.topics.pending], fromBeginning: true });
    await fast.run(createDeliverer(d, 'fast'));
    consumers.push(fast);
  }
  if (worker.lanes !== 'fast') {
    const slow = d.logStore.consumer({ groupId: `${kafka.consumer_group}-slow`, topics: [kafka.topics.slow], fromBeginning: true });
    await slow.run(createDeliverer({ ...d, pace: createPacer(concurrency.slow_lane_rate) }, 'slow'));
    consumers.push(slow);
  }
  return { consumers, stop: async () => void (await Promise.all(consumers.map((c) => c.stop()))) };
};
