import type { Admin, ITopicConfig } from 'kafkajs';
import { errorMessage } from '../../core/errors/errors';

const notVisibleYet = (e: unknown): boolean => (e as { type?: string }).type === 'UNKNOWN_TOPIC_OR_PARTITION' || /does not host this topic-partition/i.test(errorMessage(e));

/**
 * Creates topics and returns once every partition has a leader in the metadata a broker
 * answers with. kafkajs' own wait for leaders gives up on the first "does not host this
 * topic-partition", which a broker answers right after creating a topic on a busy machine:
 * it only means "not visible yet", so this keeps asking, for at most `waitMs`.
 */
export const createTopicsVisible = async (admin: Admin, topics: ITopicConfig[], waitMs = 30_000): Promise<void> => {
  await admin.createTopics({ waitForLeaders: true, topics }).catch((e: unknown) => {
    if (!notVisibleYet(e)) throw e;
  });
  await untilLeaders(
    admin,
    topics.map((t) => t.topic),
    waitMs,
  );
};

/** Waits until each topic shows at least `counts[name]` partitions (1 when not given), each with a leader. */
export const untilLeaders = async (admin: Admin, names: string[], waitMs: number, counts: Record<string, number> = {}): Promise<void> => {
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      const meta = await admin.fetchTopicMetadata({ topics: names });
      const ready = names.every((n) => {
        const parts = meta.topics.find((t) => t.name === n)?.partitions ?? [];
        return parts.length >= (counts[n] ?? 1) && parts.every((p) => p.leader >= 0);
      });
      if (ready) return;
    } catch (e) {
      if (!notVisibleYet(e)) throw e;
    }
    if (Date.now() > deadline) throw new Error(`topics ${names.join(', ')} have no leader for every partition after ${waitMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
};
