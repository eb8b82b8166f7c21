import { createRequire } from 'node:module';
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { coordinatorLost } from '../../workers/kafka/coordinator';

// kafkajs' own OffsetManager (what a consumer commits through) on stand-in brokers: once its
// coordinator died or said it no longer coordinates the group, the next commit goes to the
// broker the cluster names now, not to the node it had (test/replicated/
// coordinator-failover.cluster.test.ts on real brokers: 26 s of failed commits before).

type OffsetManager = { commitOffsets: (o: object) => Promise<void> };
const OM = createRequire(import.meta.url)('kafkajs/src/consumer/offsetManager/index.js') as new (o: object) => OffsetManager;

const broker = (name: string, fail?: () => Error | undefined) => {
  const commits: string[] = [];
  return {
    commits,
    isConnected: () => true,
    offsetCommit: async () => {
      const e = fail?.();
      if (e) throw e;
      commits.push(name);
    },
  };
};
const commit = { topics: [{ topic: 't', partitions: [{ partition: 0, offset: '5' }] }] };

const manager = (first: ReturnType<typeof broker>, now: ReturnType<typeof broker>) => {
  const asked: string[] = [];
  const committed = {};
  const cluster = {
    committedOffsets: () => committed,
    findGroupCoordinator: async () => (asked.push('find'), now),
    findBroker: async () => first,
    refreshMetadata: async () => {},
  };
  const om = new OM({
    cluster,
    coordinator: first,
    memberAssignment: { t: [0] },
    topicConfigurations: {},
    instrumentationEmitter: new EventEmitter(),
    groupId: 'g',
    generationId: 1,
    memberId: 'm',
  });
  return { om, asked };
};

const connectionError = () => Object.assign(new Error('Connection error: connect ECONNREFUSED 127.0.0.1:19700'), { name: 'KafkaJSConnectionError', code: 'ECONNREFUSED' });
const notCoordinator = () => Object.assign(new Error('This is not the correct coordinator for this group'), { name: 'KafkaJSProtocolError', type: 'NOT_COORDINATOR_FOR_GROUP' });

describe("a commit after the group's coordinator moved", () => {
  for (const [what, error] of [
    ['died (connection refused)', connectionError],
    ['answered NOT_COORDINATOR', notCoordinator],
  ] as const) {
    it(`goes to the new coordinator once the old one ${what}`, async () => {
      const dead = broker('old', error);
      const next = broker('new');
      const { om, asked } = manager(dead, next);
      await expect(om.commitOffsets(commit)).rejects.toThrow();
      await om.commitOffsets(commit);
      expect(next.commits).toEqual(['new']);
      expect(asked).toEqual(['find']);
    });
  }

  it('stays with a coordinator that answers, and with one that fails otherwise', async () => {
    let calls = 0;
    const flaky = broker('same', () => (calls++ ? undefined : Object.assign(new Error('rebalancing'), { type: 'REBALANCE_IN_PROGRESS' })));
    const { om, asked } = manager(flaky, broker('other'));
    await expect(om.commitOffsets(commit)).rejects.toThrow();
    await om.commitOffsets(commit);
    await om.commitOffsets(commit);
    expect(flaky.commits).toEqual(['same', 'same']);
    expect(asked).toEqual([]);
    expect(coordinatorLost(new Error('Broker 1 not found in the cached metadata'))).toBe(true);
  });
});
