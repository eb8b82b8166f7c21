import type { TopicSpec } from '../ports/log';

// What the config asks of each topic against what the brokers have: the checks of
// `howk doctor` and the steps of `howk topics migrate` (docs/OPERATIONS.md, CLI).

/** One topic as described by the brokers; undefined configs are not reported. */
export type TopicState = { name: string; partitions: number; cleanupPolicy?: string; retentionMs?: number };

export type TopicStep =
  | { kind: 'create'; topic: string; partitions: number }
  | { kind: 'partitions'; topic: string; from: number; to: number }
  | { kind: 'config'; topic: string; name: 'cleanup.policy' | 'retention.ms'; from: string | undefined; to: string };

/** A difference the migration cannot fix: Kafka never lowers a topic's partitions. */
export type TopicWarning = { topic: string; message: string };

export type TopicPlan = { steps: TopicStep[]; warnings: TopicWarning[] };

export const wantedConfigs = (s: TopicSpec): { 'cleanup.policy': string; 'retention.ms'?: string } =>
  s.compacted ? { 'cleanup.policy': 'compact' } : { 'cleanup.policy': 'delete', ...(s.retentionMs ? { 'retention.ms': String(s.retentionMs) } : {}) };

export const topicPlan = (specs: readonly TopicSpec[], actual: ReadonlyMap<string, TopicState>): TopicPlan => {
  const steps: TopicStep[] = [];
  const warnings: TopicWarning[] = [];
  for (const s of specs) {
    const a = actual.get(s.name);
    if (!a) {
      steps.push({ kind: 'create', topic: s.name, partitions: s.partitions });
      continue;
    }
    if (a.partitions < s.partitions) steps.push({ kind: 'partitions', topic: s.name, from: a.partitions, to: s.partitions });
    if (a.partitions > s.partitions) {
      warnings.push({
        topic: s.name,
        message: `has ${a.partitions} partitions where the config asks ${s.partitions}: Kafka cannot lower it (harmless: only the count to raise to is configured)`,
      });
    }
    const want = wantedConfigs(s);
    const have = { 'cleanup.policy': a.cleanupPolicy, 'retention.ms': a.retentionMs === undefined ? undefined : String(a.retentionMs) };
    for (const name of ['cleanup.policy', 'retention.ms'] as const) {
      const to = want[name];
      if (to !== undefined && have[name] !== to) steps.push({ kind: 'config', topic: s.name, name, from: have[name], to });
    }
  }
  return { steps, warnings };
};

export const describeStep = (s: TopicStep): string =>
  s.kind === 'create'
    ? `create ${s.topic} with ${s.partitions} partition(s)`
    : s.kind === 'partitions'
      ? `raise ${s.topic} from ${s.from} to ${s.to} partitions`
      : `set ${s.name} of ${s.topic} from ${s.from ?? '(unset)'} to ${s.to}`;
