import { createRequire } from 'node:module';
import { AssignerProtocol } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { QUICK_BEAT_MS } from '../../workers/kafka/member-id';

// kafkajs' own ConsumerGroup (what a kafkajs consumer builds at each start and restart) on a
// stand-in coordinator. A consumer that kafkajs restarts after a broker outage builds a new
// one: it must rejoin under the member id it had, or the group waits kafka.rebalance_timeout
// for the member it was (10 s without deliveries after the broker's return, chaos Kafka-down
// scenario); and right after, heartbeat often enough to learn of the rebalance its group's
// leader starts by rejoining.

type Group = {
  joinAndSync: () => Promise<void>;
  leave: () => Promise<void>;
  heartbeat: (o: { interval: number }) => Promise<void>;
  memberId: string | null;
};
const ConsumerGroup = createRequire(import.meta.url)('kafkajs/src/consumer/consumerGroup.js') as new (o: object) => Group;

const logger = { info: () => {}, debug: () => {}, warn: () => {}, error: () => {}, namespace: () => logger };

const fakeBroker = () => {
  const joins: string[] = [];
  let heartbeats = 0;
  let next = 0;
  const coordinator = {
    joinGroup: async ({ memberId }: { memberId: string }) => {
      joins.push(memberId);
      return { generationId: 1, leaderId: 'someone-else', memberId: memberId || `member-${next++}`, members: [], groupProtocol: 'RoundRobinAssigner' };
    },
    syncGroup: async () => ({ memberAssignment: AssignerProtocol.MemberAssignment.encode({ version: 0, assignment: { t: [0] }, userData: Buffer.alloc(0) }) }),
    heartbeat: async () => void heartbeats++,
    leaveGroup: async () => {},
  };
  const cluster = {
    findGroupCoordinator: async () => coordinator,
    findTopicPartitionMetadata: () => [{ partitionId: 0 }],
    refreshMetadata: async () => {},
    refreshMetadataIfNecessary: async () => {},
    committedOffsets: () => ({}),
  };
  return { cluster, joins, heartbeats: () => heartbeats };
};

/** A kafkajs start: a new ConsumerGroup of the same consumer (the same event emitter). */
const start = (cluster: object, emitter: object): Group =>
  new ConsumerGroup({
    cluster,
    groupId: 'g',
    topics: ['t'],
    topicConfigurations: {},
    logger,
    instrumentationEmitter: emitter,
    retry: { retries: 0 },
    assigners: [],
    sessionTimeout: 30_000,
    rebalanceTimeout: 10_000,
  });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a kafkajs consumer group started again by kafkajs', () => {
  it('rejoins under the member id it had, unless it left the group', async () => {
    const b = fakeBroker();
    const emitter = { emit: () => {} };
    await start(b.cluster, emitter).joinAndSync();
    await start(b.cluster, emitter).joinAndSync();
    expect(b.joins).toEqual(['', 'member-0']);
    const g = start(b.cluster, emitter);
    await g.joinAndSync();
    await g.leave();
    await start(b.cluster, emitter).joinAndSync();
    expect(b.joins.at(-1)).toBe('');
    // Another consumer (another emitter) never takes this one's id.
    await start(b.cluster, { emit: () => {} }).joinAndSync();
    expect(b.joins.at(-1)).toBe('');
  });

  it('heartbeats at most QUICK_BEAT_MS apart right after such a rejoin, at its interval otherwise', async () => {
    const b = fakeBroker();
    const emitter = { emit: () => {} };
    const first = start(b.cluster, emitter);
    await first.joinAndSync();
    await sleep(QUICK_BEAT_MS + 100);
    await first.heartbeat({ interval: 3000 });
    expect(b.heartbeats()).toBe(0);
    const again = start(b.cluster, emitter);
    await again.joinAndSync();
    await sleep(QUICK_BEAT_MS + 100);
    await again.heartbeat({ interval: 3000 });
    expect(b.heartbeats()).toBe(1);
  });
});
