import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config/load';
import { describeStep, topicPlan, type TopicState } from '../../core/pipeline/topic-plan';
import { replicationProblem, resolveReplication, topicSpecs } from '../../core/pipeline/topics';

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

describe('replication of the topics (kafka.replication_factor, kafka.min_insync_replicas)', () => {
  const spec = (rf: number | 'auto', min: number | 'auto') => ({ name: 'p', partitions: 3, retentionMs: 1000, replicationFactor: rf, minInsyncReplicas: min });

  it('auto: 3 replicas and min.insync.replicas 2 with three or more brokers; the broker count and 1 below', () => {
    const got = (brokers: number) => {
      const r = resolveReplication(spec('auto', 'auto'), brokers);
      return [r.replicationFactor, r.minInsyncReplicas];
    };
    expect([1, 2, 3, 5].map(got)).toEqual([
      [1, 1],
      [2, 1],
      [3, 2],
      [3, 2],
    ]);
    expect(resolveReplication(spec(5, 'auto'), 5)).toMatchObject({ replicationFactor: 5, minInsyncReplicas: 2 });
    expect(resolveReplication(spec(2, 2), 3)).toMatchObject({ replicationFactor: 2, minInsyncReplicas: 2 });
  });

  it('the defaults resolve to auto and every Howk topic carries it', () => {
    const defaults = loadConfig({});
    expect([defaults.kafka.replication_factor, defaults.kafka.min_insync_replicas]).toEqual(['auto', 'auto']);
    for (const s of topicSpecs(defaults)) expect(resolveReplication(s, 3), s.name).toMatchObject({ replicationFactor: 3, minInsyncReplicas: 2 });
  });

  it('names what cannot be met: more replicas than brokers, a minimum above the replicas', () => {
    expect(replicationProblem(resolveReplication(spec(3, 2), 2), 2)).toBe('replication factor 3 asked but only 2 broker(s) answer');
    expect(replicationProblem(resolveReplication(spec('auto', 3), 3), 3)).toBeUndefined();
    expect(replicationProblem(resolveReplication(spec('auto', 2), 1), 1)).toContain('min.insync.replicas 2 is above the replication factor 1');
    expect(replicationProblem(resolveReplication(spec('auto', 'auto'), 3), 3)).toBeUndefined();
  });

  it('a config whose min_insync_replicas exceeds its replication_factor is refused, naming both', () => {
    expect(() => loadConfig({ env: { HOWK_KAFKA_REPLICATION_FACTOR: '2', HOWK_KAFKA_MIN_INSYNC_REPLICAS: '3' } })).toThrow(
      /kafka\.min_insync_replicas \(HOWK_KAFKA_MIN_INSYNC_REPLICAS\): is 3, above kafka\.replication_factor \(2\)/,
    );
    expect(() => loadConfig({ env: { HOWK_KAFKA_REPLICATION_FACTOR: '0' } })).toThrow(/kafka\.replication_factor/);
    expect(() => loadConfig({ env: { HOWK_KAFKA_MIN_INSYNC_REPLICAS: 'two' } })).toThrow(/kafka\.min_insync_replicas/);
    expect(loadConfig({ env: { HOWK_KAFKA_REPLICATION_FACTOR: '3', HOWK_KAFKA_MIN_INSYNC_REPLICAS: '2' } }).kafka).toMatchObject({ replication_factor: 3, min_insync_replicas: 2 });
  });

  it('migrate raises replicas before it sets min.insync.replicas, and never lowers replicas', () => {
    const resolved = [resolveReplication(spec('auto', 'auto'), 3)];
    const plan = topicPlan(resolved, new Map([['p', { name: 'p', partitions: 3, cleanupPolicy: 'delete', retentionMs: 1000, replicationFactor: 1, minInsyncReplicas: 1 }]]));
    expect(plan.steps).toEqual([
      { kind: 'replicas', topic: 'p', from: 1, to: 3 },
      { kind: 'config', topic: 'p', name: 'min.insync.replicas', from: '1', to: '2' },
    ]);
    expect(plan.steps.map(describeStep)).toEqual(['raise p from 1 to 3 replicas per partition', 'set min.insync.replicas of p from 1 to 2']);
    const more = topicPlan(
      [resolveReplication(spec(2, 1), 3)],
      new Map([['p', { name: 'p', partitions: 3, cleanupPolicy: 'delete', retentionMs: 1000, replicationFactor: 3, minInsyncReplicas: 1 }]]),
    );
    expect(more.steps).toEqual([]);
    expect(more.warnings).toEqual([{ topic: 'p', message: expect.stringContaining('has 3 replicas where the config asks 2') }]);
    expect(topicPlan(resolved, new Map()).steps).toEqual([{ kind: 'create', topic: 'p', partitions: 3, replicationFactor: 3 }]);
  });
});
