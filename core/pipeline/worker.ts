import type { LogConsumer } from '../ports/log';
import { createDeliverer, type DeliverDeps } from './deliver';
import type { Log } from '../ports/log';

export type WorkerDeps = DeliverDeps & { logStore: Log };

/** The fast-lane consumer: pending topic → deliverer, offsets committed per batch after it resolves. */
export const startWorker = async (d: WorkerDeps): Promise<{ consumer: LogConsumer; stop: () => Promise<void> }> => {
  const deliver = createDeliverer(d);
  const consumer = d.logStore.consumer({ groupId: d.config.kafka.consumer_group, topics: [d.config.kafka.topics.pending], fromBeginning: true });
  await consumer.run(deliver);
  return { consumer, stop: () => consumer.stop() };
};
