import { AssignerProtocol, type Cluster, type PartitionAssigner } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { SortedRoundRobinAssigner } from '../../workers/kafka/assigner';

// The group leader's assignment after a broker restart: the restarted broker lists a topic's
// partitions in another order, and with the same members each worker must keep the
// partitions it had (a moved partition is consumed again by a worker that does not know the
// passes its old owner made: duplicates in the chaos Kafka-down scenario).

const members = [{ memberId: 'worker-b' }, { memberId: 'worker-a' }].map((m) => ({ ...m, memberMetadata: Buffer.alloc(0) }));

const assignmentWith = async (assigner: PartitionAssigner, order: Record<string, number[]>) => {
  const cluster = { findTopicPartitionMetadata: (topic: string) => order[topic]!.map((partitionId) => ({ partitionId })) } as unknown as Cluster;
  const out = await assigner({ cluster, groupId: 'g', logger: undefined as never }).assign({ members, topics: Object.keys(order) });
  return Object.fromEntries(out.map(({ memberId, memberAssignment }) => [memberId, AssignerProtocol.MemberAssignment.decode(memberAssignment)!.assignment]));
};

describe('SortedRoundRobinAssigner', () => {
  it('gives the same members the same partitions whatever order the broker lists them in', async () => {
    const before = await assignmentWith(SortedRoundRobinAssigner, { pending: [1, 3, 2, 5, 0, 4] });
    const after = await assignmentWith(SortedRoundRobinAssigner, { pending: [3, 2, 1, 5, 4, 0] });
    expect(after).toEqual(before);
    expect(before).toEqual({ 'worker-a': { pending: [0, 2, 4] }, 'worker-b': { pending: [1, 3, 5] } });
  });

  it('assigns every partition of every topic exactly once, round robin over the members in id order', async () => {
    const a = await assignmentWith(SortedRoundRobinAssigner, { slow: [2, 0, 1], pending: [1, 0] });
    expect(a).toEqual({ 'worker-a': { pending: [0], slow: [0, 2] }, 'worker-b': { pending: [1], slow: [1] } });
  });

  it("speaks kafkajs' round-robin protocol, so that workers of an older version share the group", () => {
    const p = SortedRoundRobinAssigner({ cluster: {} as Cluster, groupId: 'g', logger: undefined as never }).protocol({ topics: ['t'] });
    expect(p.name).toBe('RoundRobinAssigner');
    expect(AssignerProtocol.MemberMetadata.decode(p.metadata)).toMatchObject({ version: 0, topics: ['t'] });
  });
});
