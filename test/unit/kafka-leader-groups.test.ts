import type { Admin, PartitionMetadata } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { LeaderGroups } from '../../workers/kafka/leader-groups';
import { FastDefaultPartitioner } from '../../workers/kafka/partitioner';

// The split that keeps kafkajs's retries from forgetting the partitions of a dead broker
// (workers/kafka/leader-groups.ts): one group per leading broker, each record with the
// partition kafkajs would have picked. The leaders come from a stand-in admin client.

const parts = (leaders: number[]): PartitionMetadata[] =>
  leaders.map((leader, partitionId) => ({ partitionErrorCode: 0, partitionId, leader, replicas: [1, 2, 3], isr: [1, 2, 3] }));

const adminWith = (byTopic: Record<string, number[]>, calls: { n: number }) =>
  (async () =>
    ({
      fetchTopicMetadata: async ({ topics }: { topics: string[] }) => {
        calls.n++;
        return { topics: topics.map((name) => ({ name, partitions: parts(byTopic[name]!) })) };
      },
    }) as unknown as Admin) as () => Promise<Admin>;

describe('produce split by partition leader', () => {
  it('gives one group per leading broker, every record once, on the partition kafkajs would pick', async () => {
    const calls = { n: 0 };
    const groups = new LeaderGroups(adminWith({ a: [1, 2, 3, 1, 2, 3], b: [2, 2] }, calls));
    const records = (n: number) => Array.from({ length: n }, (_, i) => ({ key: `k${i}`, value: `v${i}` }));
    const split = await groups.split([
      { topic: 'a', messages: records(60) },
      { topic: 'b', messages: records(10) },
    ]);
    expect(split).toHaveLength(3);
    const pick = FastDefaultPartitioner();
    const leaderOf = { a: [1, 2, 3, 1, 2, 3], b: [2, 2] } as Record<string, number[]>;
    const seen: string[] = [];
    for (const group of split) {
      const leaders = new Set(group.flatMap(({ topic, messages }) => messages.map((m) => leaderOf[topic]![m.partition!])));
      expect(leaders.size, 'one broker per group').toBe(1);
      for (const { topic, messages } of group) {
        for (const m of messages) {
          expect(m.partition).toBe(pick({ topic, partitionMetadata: parts(leaderOf[topic]!), message: { key: m.key, value: m.value } }));
          seen.push(`${topic}/${m.value}`);
        }
      }
    }
    expect(seen.sort()).toEqual([...records(60).map((r) => `a/${r.value}`), ...records(10).map((r) => `b/${r.value}`)].sort());
    // The leaders are read once per topic and kept; a failure forgets them.
    await groups.split([{ topic: 'a', messages: records(1) }]);
    expect(calls.n).toBe(2);
    groups.invalidate();
    await groups.split([{ topic: 'a', messages: records(1) }]);
    expect(calls.n).toBe(3);
  });

  it('sends unsplit when the leaders cannot be read (kafkajs then routes and reports)', async () => {
    const failing = new LeaderGroups(async () => {
      throw new Error('no admin');
    });
    const tm = [{ topic: 'a', messages: [{ key: 'k', value: 'v' }] }];
    expect(await failing.split(tm)).toEqual([tm]);
  });
});
