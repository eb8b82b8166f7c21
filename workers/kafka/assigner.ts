import { AssignerProtocol, type PartitionAssigner } from 'kafkajs';

/**
 * kafkajs' round robin, over the partitions in id order. kafkajs' own takes them in the order
 * of the leader's metadata, which a restarted broker answers in another order: the rebalance
 * after a broker outage then moved half the partitions between workers with the same members
 * (seen in the chaos Kafka-down scenario). A moved partition is consumed again by a worker
 * that does not know the passes its old owner made, whose outcomes were still being written
 * (Kafka had just come back), so it sent them again (59 of 600 in a run). In id order, the
 * same members get the same partitions, and a worker that consumes its own partitions again
 * knows its passes (core/pipeline/recent-outcomes.ts).
 *
 * Same protocol name and version as kafkajs': the group's leader alone assigns, so workers of
 * a version with kafkajs' assigner share a group with these during a rolling deploy.
 */
export const SortedRoundRobinAssigner: PartitionAssigner = ({ cluster }) => ({
  name: 'RoundRobinAssigner',
  version: 0,
  async assign({ members, topics }) {
    const sortedMembers = members.map(({ memberId }) => memberId).sort();
    const assignment = new Map<string, Record<string, number[]>>();
    let i = 0;
    for (const topic of [...topics].sort()) {
      const ids = cluster
        .findTopicPartitionMetadata(topic)
        .map((m) => m.partitionId)
        .sort((a, b) => a - b);
      for (const partition of ids) {
        const member = sortedMembers[i++ % sortedMembers.length]!;
        let mine = assignment.get(member);
        if (!mine) assignment.set(member, (mine = Object.create(null) as Record<string, number[]>));
        (mine[topic] ??= []).push(partition);
      }
    }
    return [...assignment].map(([memberId, a]) => ({
      memberId,
      memberAssignment: AssignerProtocol.MemberAssignment.encode({ version: 0, assignment: a, userData: Buffer.alloc(0) }),
    }));
  },
  protocol({ topics }) {
    return { name: 'RoundRobinAssigner', metadata: AssignerProtocol.MemberMetadata.encode({ version: 0, topics, userData: Buffer.alloc(0) }) };
  },
});
