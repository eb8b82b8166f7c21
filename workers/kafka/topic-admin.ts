import kafkajs, { type Admin } from 'kafkajs';
import type { Config } from '../../core/config/schema';
import { wantedConfigs, type TopicState, type TopicStep } from '../../core/pipeline/topic-plan';
import type { ResolvedTopicSpec } from '../../core/pipeline/topics';
import { createTopicsVisible, untilLeaders } from './create-topics';

// Direct Kafka admin for the commands the HTTP API cannot serve: `howk doctor` and
// `howk topics migrate`.

const { Kafka, logLevel, ConfigResourceTypes } = kafkajs;

/** The admin client the CLI's commands and checks are handed (kafkajs'), named here so that they need not import the engine. */
export type KafkaAdmin = Admin;

export const connectAdmin = async (config: Config, timeoutMs = 5000): Promise<Admin> => {
  const kafka = new Kafka({
    clientId: `${config.kafka.client_id}-cli`,
    brokers: config.kafka.brokers,
    logLevel: logLevel.NOTHING,
    connectionTimeout: Math.min(timeoutMs, 3000),
    requestTimeout: timeoutMs,
    retry: { retries: 1, initialRetryTime: 200, maxRetryTime: 1000 },
  });
  const admin = kafka.admin();
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([admin.connect(), new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs)))]);
  } catch (e) {
    await admin.disconnect().catch(() => {});
    throw e;
  } finally {
    clearTimeout(timer);
  }
  return admin;
};

/** One partition as the metadata has it: who leads, which replicas it has and which are in sync. */
export type PartitionState = { partition: number; leader: number; replicas: number[]; isr: number[] };
export type TopicHealth = TopicState & { partitionStates: PartitionState[] };

/** Partitions, replicas, cleanup.policy, retention.ms and min.insync.replicas of the topics that exist (the others are left out). */
export const describeTopics = async (admin: Admin, names: string[]): Promise<Map<string, TopicHealth>> => {
  const existing = new Set(await admin.listTopics());
  const present = names.filter((n) => existing.has(n));
  const out = new Map<string, TopicHealth>();
  if (!present.length) return out;
  const meta = await admin.fetchTopicMetadata({ topics: present });
  const configs = await admin.describeConfigs({
    includeSynonyms: false,
    resources: present.map((name) => ({ type: ConfigResourceTypes.TOPIC, name, configNames: ['cleanup.policy', 'retention.ms', 'min.insync.replicas'] })),
  });
  for (const t of meta.topics) {
    const partitionStates = t.partitions.map((p) => ({ partition: p.partitionId, leader: p.leader, replicas: p.replicas, isr: p.isr }));
    const replicationFactor = partitionStates.length ? Math.min(...partitionStates.map((p) => p.replicas.length)) : undefined;
    out.set(t.name, { name: t.name, partitions: t.partitions.length, replicationFactor, partitionStates });
  }
  for (const r of configs.resources) {
    const t = out.get(r.resourceName);
    if (!t) continue;
    const get = (n: string) => r.configEntries.find((e) => e.configName === n)?.configValue;
    t.cleanupPolicy = get('cleanup.policy');
    const ret = get('retention.ms');
    if (ret !== undefined) t.retentionMs = Number(ret);
    const min = get('min.insync.replicas');
    if (min !== undefined) t.minInsyncReplicas = Number(min);
  }
  return out;
};

/**
 * The brokers of the cluster: those that answer and those that hold replicas of `topics`
 * without answering (down right now). `auto` replication counts them all, so that one broker
 * down does not make the config ask for fewer replicas.
 */
export const knownBrokers = async (admin: Admin, topics: ReadonlyMap<string, TopicHealth>): Promise<number[]> => {
  const ids = new Set((await admin.describeCluster()).brokers.map((b) => b.nodeId));
  for (const t of topics.values()) for (const p of t.partitionStates) for (const r of p.replicas) ids.add(r);
  return [...ids].sort((a, b) => a - b);
};

/**
 * Applies the steps: creates, then partitions, then replicas (waiting until the brokers have
 * copied them), then configs, so that a raised min.insync.replicas never finds fewer replicas.
 * Topic configs are set with the incremental form of AlterConfigs (one entry each) so other
 * overrides on the topic stay as they are.
 */
export const applySteps = async (admin: Admin, specs: readonly ResolvedTopicSpec[], steps: TopicStep[], brokers: number[], waitMs = 120_000): Promise<void> => {
  const create = steps.filter((s) => s.kind === 'create');
  if (create.length) {
    await createTopicsVisible(
      admin,
      create.map((s) => {
        const spec = specs.find((x) => x.name === s.topic)!;
        return {
          topic: s.topic,
          numPartitions: s.partitions,
          replicationFactor: spec.replicationFactor,
          configEntries: Object.entries(wantedConfigs(spec)).map(([name, value]) => ({ name, value: value! })),
        };
      }),
    );
  }
  const raise = steps.flatMap((s) => (s.kind === 'partitions' ? [{ topic: s.topic, count: s.to }] : []));
  if (raise.length) {
    await admin.createPartitions({ validateOnly: false, topicPartitions: raise });
    // A broker acknowledges CreatePartitions before its metadata has them: a `doctor` or a
    // second `migrate` straight after must not see the old count (seen on a loaded machine).
    await untilLeaders(
      admin,
      raise.map((r) => r.topic),
      waitMs,
      Object.fromEntries(raise.map((r) => [r.topic, r.count])),
    );
  }
  const replicas = steps.flatMap((s) => (s.kind === 'replicas' ? [s] : []));
  if (replicas.length) await raiseReplicas(admin, replicas, brokers, waitMs);
  const byTopic = new Map<string, { name: string; value: string }[]>();
  for (const s of steps) if (s.kind === 'config') byTopic.set(s.topic, [...(byTopic.get(s.topic) ?? []), { name: s.name, value: s.to }]);
  for (const [name, entries] of byTopic) {
    await incrementalAlter(admin, name, entries);
  }
};

/**
 * Adds replicas to every partition short of `to`, each on the broker of the topic holding the
 * fewest so far, and waits until the brokers report no reassignment in progress.
 */
const raiseReplicas = async (admin: Admin, steps: { topic: string; to: number }[], brokers: number[], waitMs: number): Promise<void> => {
  const meta = await admin.fetchTopicMetadata({ topics: steps.map((s) => s.topic) });
  const topics = steps.map((s) => {
    const parts = meta.topics.find((t) => t.name === s.topic)?.partitions ?? [];
    const load = new Map(brokers.map((b) => [b, 0]));
    for (const p of parts) for (const r of p.replicas) load.set(r, (load.get(r) ?? 0) + 1);
    const partitionAssignment = parts
      .filter((p) => p.replicas.length < s.to)
      .map((p) => {
        const replicas = [...p.replicas];
        while (replicas.length < s.to) {
          const pick = brokers.filter((b) => !replicas.includes(b)).sort((a, b) => load.get(a)! - load.get(b)! || a - b)[0];
          if (pick === undefined) throw new Error(`${s.topic} needs ${s.to} replicas but the cluster has ${brokers.length} broker(s)`);
          replicas.push(pick);
          load.set(pick, load.get(pick)! + 1);
        }
        return { partition: p.partitionId, replicas };
      });
    return { topic: s.topic, partitionAssignment };
  });
  await admin.alterPartitionReassignments({ topics });
  const deadline = Date.now() + waitMs;
  for (;;) {
    const ongoing = await admin.listPartitionReassignments({});
    const left = ongoing.topics.filter((t) => steps.some((s) => s.topic === t.topic) && t.partitions.length);
    if (!left.length) return;
    if (Date.now() > deadline)
      throw new Error(`replicas of ${left.map((t) => t.topic).join(', ')} still being copied after ${waitMs} ms; run the migration again to finish the configs`);
    await new Promise((r) => setTimeout(r, 250));
  }
};

// kafkajs 2.2 has no IncrementalAlterConfigs: AlterConfigs replaces a topic's whole set of
// overrides, so the current overrides are read first and sent along with the change.
const incrementalAlter = async (admin: Admin, topic: string, entries: { name: string; value: string }[]): Promise<void> => {
  const current = await admin.describeConfigs({ includeSynonyms: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: topic }] });
  const overrides = (current.resources[0]?.configEntries ?? []).filter((e) => !e.isDefault && !e.readOnly && e.configSource === 1 && !e.isSensitive);
  const merged = new Map(overrides.map((e) => [e.configName, e.configValue]));
  for (const e of entries) merged.set(e.name, e.value);
  await admin.alterConfigs({
    validateOnly: false,
    resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configEntries: [...merged].map(([name, value]) => ({ name, value })) }],
  });
};
