import { Kafka, logLevel } from 'kafkajs';
import { requireEnv } from './env';

/**
 * Deletes a test's own topics, best effort: cleanup that cannot reach a busy broker leaves
 * topics named after the run behind, and must not fail a file whose tests all passed.
 */
export const dropTopics = async (topics: readonly string[], clientId = 'howk-test-cleanup'): Promise<void> => {
  if (!topics.length) return;
  const admin = new Kafka({ clientId, brokers: requireEnv('KAFKA_BROKERS').split(','), logLevel: logLevel.NOTHING }).admin();
  try {
    await admin.connect();
    await admin.deleteTopics({ topics: [...topics], timeout: 10_000 });
  } catch {
    // left behind: every name carries the run's id, so nothing else reads them
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
};
