import type { TopicSpec } from '../ports/log';
import type { ResolvedTopicSpec } from './topics';

// What the config asks of each topic against what the brokers have: the checks of
// `howk doctor` and the steps of `howk topics migrate` (docs/OPERATIONS.md, CLI).

/** One topic as described by the brokers; undefined values are not reported. */
export type TopicState = {
  name: string;
  partitions: number;
  cleanupPolicy?: string;
  retentionMs?: number;
  /** The fewest replicas any of its partitions has. */
  replicationFactor?: number;
  minInsyncReplicas?: number;
};

export type TopicConfigName = 'cleanup.policy' | 'retention.ms' | 'min.insync.replicas';

export type TopicStep =
  | { kind: 'create'; topic: string; partitions: number; replicationFactor?: number }
  | { kind: 'partitions'; topic: string; from: number; to: number }
  | { kind: 'replicas'; topic: string; from: number; to: number }
  | { kind: 'config'; topic: string; name: TopicConfigName; from: string | undefined; to: string };

/** A difference the migration does not fix: Kafka never lowers a topic's partitions; replicas are never dropped. */
export type TopicWarning = { topic: string; message: string };

export type TopicPlan = { steps: TopicStep[]; warnings: TopicWarning[] };

type Spec = TopicSpec | ResolvedTopicSpec;

export const wantedConfigs = (s: Spec): Partial<Record<TopicConfigName, string>> => ({
  ...(s.compacted ? { 'cleanup.policy': 'compact' } : { 'cleanup.policy': 'delete', ...(s.retentionMs ? { 'retention.ms': String(s.retentionMs) } : {}) }),
  ...(typeof s.minInsyncReplicas === 'number' ? { 'min.insync.replicas': String(s.minInsyncReplicas) } : {}),
});

const CONFIG_NAMES: readonly TopicConfigName[] = ['cleanup.policy', 'retention.ms', 'min.insync.replicas'];

/** The steps that bring `actual` to `specs`. Replication is compared only where the spec gives a number (resolve `auto` first). */
export const topicPlan = (specs: readonly Spec[], actual: ReadonlyMap<string, TopicState>): TopicPlan => {
  const steps: TopicStep[] = [];
  const warnings: TopicWarning[] = [];
  for (const s of specs) {
    const a = actual.get(s.name);
    const rf = typeof s.replicationFactor === 'number' ? s.replicationFactor : undefined;
    if (!a) {
      steps.push({ kind: 'create', topic: s.name, partitions: s.partitions, ...(rf === undefined ? {} : { replicationFactor: rf }) });
      continue;
    }
    if (a.partitions < s.partitions) steps.push({ kind: 'partitions', topic: s.name, from: a.partitions, to: s.partitions });
    if (a.partitions > s.partitions) {
      warnings.push({
        topic: s.name,
        message: `has ${a.partitions} partitions where the config asks ${s.partitions}: Kafka cannot lower it (harmless: only the count to raise to is configured)`,
      });
    }
    if (rf !== undefined && a.replicationFactor !== undefined) {
      if (a.replicationFactor < rf) steps.push({ kind: 'replicas', topic: s.name, from: a.replicationFactor, to: rf });
      if (a.replicationFactor > rf)
        warnings.push({ topic: s.name, message: `has ${a.replicationFactor} replicas where the config asks ${rf}: left as is (more copies are harmless)` });
    }
    const want = wantedConfigs(s);
    const have: Record<TopicConfigName, string | undefined> = {
      'cleanup.policy': a.cleanupPolicy,
      'retention.ms': a.retentionMs === undefined ? undefined : String(a.retentionMs),
      'min.insync.replicas': a.minInsyncReplicas === undefined ? undefined : String(a.minInsyncReplicas),
    };
    for (const name of CONFIG_NAMES) {
      const to = want[name];
      if (to !== undefined && have[name] !== to) steps.push({ kind: 'config', topic: s.name, name, from: have[name], to });
    }
  }
  return { steps, warnings };
};

export const describeStep = (s: TopicStep): string =>
  s.kind === 'create'
    ? `create ${s.topic} with ${s.partitions} partition(s)${s.replicationFactor ? ` and ${s.replicationFactor} replica(s)` : ''}`
    : s.kind === 'partitions'
      ? `raise ${s.topic} from ${s.from} to ${s.to} partitions`
      : s.kind === 'replicas'
        ? `raise ${s.topic} from ${s.from} to ${s.to} replicas per partition`
        : `set ${s.name} of ${s.topic} from ${s.from ?? '(unset)'} to ${s.to}`;
