import { describe, expect, it } from 'vitest';
import { describeStep, topicPlan, type TopicState } from '../../core/pipeline/topic-plan';

describe('topic plan (howk topics migrate, howk doctor)', () => {
  const specs = [
    { name: 'p', partitions: 6, retentionMs: 3_600_000 },
    { name: 's', partitions: 6, compacted: true },
    { name: 'k', partitions: 1, compacted: true },
  ];
  const have = (...t: TopicState[]) => new Map(t.map((x) => [x.name, x]));

  it('nothing to do when the brokers match the config', () => {
    const plan = topicPlan(
      specs,
      have(
        { name: 'p', partitions: 6, cleanupPolicy: 'delete', retentionMs: 3_600_000 },
        { name: 's', partitions: 6, cleanupPolicy: 'compact' },
        { name: 'k', partitions: 1, cleanupPolicy: 'compact', retentionMs: 1 },
      ),
    );
    expect(plan).toEqual({ steps: [], warnings: [] });
  });

  it('creates, raises partitions, sets cleanup.policy and retention; never lowers', () => {
    const plan = topicPlan(specs, have({ name: 'p', partitions: 2, cleanupPolicy: 'compact', retentionMs: 60_000 }, { name: 'k', partitions: 3, cleanupPolicy: 'compact' }));
    expect(plan.steps).toEqual([
      { kind: 'partitions', topic: 'p', from: 2, to: 6 },
      { kind: 'config', topic: 'p', name: 'cleanup.policy', from: 'compact', to: 'delete' },
      { kind: 'config', topic: 'p', name: 'retention.ms', from: '60000', to: '3600000' },
      { kind: 'create', topic: 's', partitions: 6 },
    ]);
    expect(plan.warnings).toEqual([{ topic: 'k', message: expect.stringContaining('has 3 partitions where the config asks 1') }]);
    expect(plan.steps.map(describeStep)).toEqual([
      'raise p from 2 to 6 partitions',
      'set cleanup.policy of p from compact to delete',
      'set retention.ms of p from 60000 to 3600000',
      'create s with 6 partition(s)',
    ]);
  });
});
