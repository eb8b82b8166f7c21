import kafkajs, { type Assignment, type Consumer, type PartitionAssigner } from 'kafkajs';

// kafkajs is CommonJS: Node's ESM loader does not see these as named exports.
const { AssignerProtocol } = kafkajs;

/**
 * kafkajs' only assigner deals the partitions round-robin over the member ids sorted, and a
 * member id is random: a member that joins or leaves moves nearly every partition of the
 * group. A partition that moves while its old owner still delivers its batches is sent again
 * by the new owner from the last commit (a duplicate), and each move restarts a fetch.
 * This one keeps each partition where it was: every member tells, in its join, what it owns;
 * the leader leaves that in place as far as an even share allows and deals the rest. A member
 * that joins takes only its share (from the members above theirs); a member that leaves
 * (or died) gives its partitions to the ones below their share.
 */

const NAME = 'HowkSticky';
const keyOf = (topic: string, partition: number) => `${topic}\u0000${partition}`;

/**
 * Who gets which partition (keys `topic\0partition`): each member keeps what it owned, up to
 * its share (floor or ceil of partitions / members; the ceil goes to those that own most); a
 * partition owned by two members stays with the first by id. Deterministic in its input.
 */
export const stickyPlan = (partitions: readonly string[], members: readonly { id: string; owned: readonly string[] }[]): Map<string, string[]> => {
  const plan = new Map<string, string[]>();
  if (!members.length) return plan;
  const exists = new Set(partitions);
  const taken = new Set<string>();
  const ids = members.map((m) => m.id).sort();
  const owned = new Map(members.map((m) => [m.id, m.owned]));
  for (const id of ids) {
    const kept: string[] = [];
    for (const p of owned.get(id) ?? []) {
      if (!exists.has(p) || taken.has(p)) continue;
      taken.add(p);
      kept.push(p);
    }
    plan.set(id, kept);
  }
  const base = Math.floor(partitions.length / ids.length);
  let extra = partitions.length % ids.length;
  const byHeld = [...ids].sort((a, b) => plan.get(b)!.length - plan.get(a)!.length || (a < b ? -1 : 1));
  const share = new Map(byHeld.map((id) => [id, base + (extra-- > 0 ? 1 : 0)]));
  const free = partitions.filter((p) => !taken.has(p));
  for (const id of ids) {
    const kept = plan.get(id)!;
    if (kept.length > share.get(id)!) free.push(...kept.splice(share.get(id)!));
  }
  for (const id of ids) {
    const kept = plan.get(id)!;
    while (kept.length < share.get(id)! && free.length) kept.push(free.shift()!);
  }
  return plan;
};

const ownedIn = (metadata: Buffer): string[] => {
  try {
    const { userData } = AssignerProtocol.MemberMetadata.decode(metadata) ?? {};
    const a = JSON.parse(userData?.length ? userData.toString('utf8') : '{}') as Assignment;
    return Object.entries(a).flatMap(([topic, ps]) => (Array.isArray(ps) ? ps.map((p) => keyOf(topic, Number(p))) : []));
  } catch {
    // A member of another version, or none: it owns nothing as far as the plan goes.
    return [];
  }
};

/** The assigner of one consumer, and `track`, which keeps what the consumer owns up to date (what it tells at its next join). */
export const stickyAssigner = (): { assigner: PartitionAssigner; track: (c: Consumer) => void } => {
  let owned: Assignment = {};
  const assigner: PartitionAssigner = ({ cluster }) => ({
    name: NAME,
    version: 0,
    async assign({ members, topics }) {
      const partitions = topics.flatMap((t) => cluster.findTopicPartitionMetadata(t).map((m) => keyOf(t, m.partitionId)));
      const plan = stickyPlan(
        partitions,
        members.map((m) => ({ id: m.memberId, owned: ownedIn(m.memberMetadata) })),
      );
      return members.map(({ memberId }) => {
        const assignment: Assignment = {};
        for (const k of plan.get(memberId) ?? []) {
          const [topic, p] = k.split('\u0000') as [string, string];
          (assignment[topic] ??= []).push(Number(p));
        }
        return { memberId, memberAssignment: AssignerProtocol.MemberAssignment.encode({ version: 0, assignment, userData: Buffer.alloc(0) }) };
      });
    },
    protocol: ({ topics }) => ({ name: NAME, metadata: AssignerProtocol.MemberMetadata.encode({ version: 0, topics, userData: Buffer.from(JSON.stringify(owned)) }) }),
  });
  return {
    assigner,
    track: (c) => {
      c.on(c.events.GROUP_JOIN, (e) => (owned = e.payload.memberAssignment));
      // A restarted consumer starts from its commits: it tells nothing it may no longer hold.
      c.on(c.events.CRASH, () => (owned = {}));
    },
  };
};
