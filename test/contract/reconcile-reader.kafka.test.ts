import { KafkaLog } from '../../workers/kafka/log';
import { KafkaTopicReader } from '../../workers/kafka/topic-reader';
import { requireEnv, uniq } from '../helpers/env';
import { readerContract } from './reconcile-reader.contract';

// Real Kafka from KAFKA_BROKERS, a fresh compacted topic per test.
readerContract('kafka', async () => {
  const brokers = requireEnv('KAFKA_BROKERS').split(',');
  const log = new KafkaLog({ brokers, clientId: 'reader-contract', produceTimeoutMs: 10_000, maxWaitMs: 20, maxBytesPerPartition: 1 << 20 });
  const producer = log.producer();
  const reader = new KafkaTopicReader({ brokers, clientId: 'reader-contract', groupPrefix: uniq('reader-contract') });
  return {
    reader,
    topic: async (partitions) => {
      const name = uniq('t-reader');
      await log.admin.ensureTopics([{ name, partitions, compacted: true }]);
      return name;
    },
    append: (records) => producer.send(records),
    cleanup: async () => {
      await reader.close();
      await producer.close();
      await log.close();
    },
  };
});
