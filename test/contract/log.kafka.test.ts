import { randomBytes } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import { KafkaLog } from '../../workers/kafka/log';
import { logContract, type LogHarness } from './log.contract';
import { logPipelineContract } from './log.contract-pipeline';

// Real Kafka from KAFKA_BROKERS (scripts/infra/kafka.sh start prints it). Every test gets
// topics and groups under its own prefix and deletes them afterwards, so runs can share a broker.
const brokersEnv = process.env.KAFKA_BROKERS;
if (!brokersEnv) throw new Error('KAFKA_BROKERS is not set: the Kafka Log contract needs a real broker (eval "$(bash scripts/infra/up.sh)" prints one)');
const brokers = brokersEnv
  .split(',')
  .map((s) => s.trim())
  .filter(Boolean);

const kafkaHarness = async (): Promise<LogHarness> => {
  const prefix = `t-${Date.now()}-${randomBytes(4).toString('hex')}`;
  const log = new KafkaLog({ brokers, clientId: `howk-test-${prefix}`, produceTimeoutMs: 10_000, maxWaitMs: 50, maxBytesPerPartition: 1_048_576 });
  return {
    log,
    topic: (base) => `${prefix}-${base}`,
    cleanup: async () => {
      await log.close();
      const admin = new Kafka({ clientId: `howk-test-cleanup-${prefix}`, brokers, logLevel: logLevel.NOTHING }).admin();
      await admin.connect();
      try {
        const topics = (await admin.listTopics()).filter((t) => t.startsWith(prefix));
        const groups = (await admin.listGroups()).groups.map((g) => g.groupId).filter((g) => g.startsWith(prefix));
        if (groups.length) await admin.deleteGroups(groups).catch(() => {});
        if (topics.length) await admin.deleteTopics({ topics }).catch(() => {});
      } finally {
        await admin.disconnect();
      }
    },
  };
};

logContract('kafka', kafkaHarness);
logPipelineContract('kafka', kafkaHarness);
