import kafkajs, { type Admin } from 'kafkajs';
import type { Config } from '../../core/config/schema';
import type { TopicSpec } from '../../core/ports/log';
import { wantedConfigs, type TopicState, type TopicStep } from '../../core/pipeline/topic-plan';

// Direct Kafka admin for the commands the HTTP API cannot serve: `howk doctor` and
// `howk topics migrate`.

const { Kafka, logLevel, ConfigResourceTypes } = kafkajs;

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

/** Partitions, cleanup.policy and retention.ms of the topics that exist (the others are left out). */
export const describeTopics = async (admin: Admin, names: string[]): Promise<Map<string, TopicState>> => {
  const existing = new Set(await admin.listTopics());
  const present = names.filter((n) => existing.has(n));
  const out = new Map<string, TopicState>();
  if (!present.length) return out;
  const meta = await admin.fetchTopicMetadata({ topics: present });
  const configs = await admin.describeConfigs({
    includeSynonyms: false,
    resources: present.map((name) => ({ type: ConfigResourceTypes.TOPIC, name, configNames: ['cleanup.policy', 'retention.ms'] })),
  });
  for (const t of meta.topics) out.set(t.name, { name: t.name, partitions: t.partitions.length });
  for (const r of configs.resources) {
    const t = out.get(r.resourceName);
    if (!t) continue;
    const get = (n: string) => r.configEntries.find((e) => e.configName === n)?.configValue;
    t.cleanupPolicy = get('cleanup.policy');
    const ret = get('retention.ms');
    if (ret !== undefined) t.retentionMs = Number(ret);
  }
  return out;
};

/**
 * Applies the steps. Topic configs are set with the incremental form of AlterConfigs (one
 * entry each) so other overrides on the topic stay as they are.
 */
export const applySteps = async (admin: Admin, specs: readonly TopicSpec[], steps: TopicStep[], replicationFactor: number): Promise<void> => {
  const create = steps.filter((s) => s.kind === 'create');
  if (create.length) {
    await admin.createTopics({
      waitForLeaders: true,
      topics: create.map((s) => {
        const spec = specs.find((x) => x.name === s.topic)!;
        return {
          topic: s.topic,
          numPartitions: s.partitions,
          replicationFactor,
          configEntries: Object.entries(wantedConfigs(spec)).map(([name, value]) => ({ name, value: value! })),
        };
      }),
    });
  }
  const raise = steps.flatMap((s) => (s.kind === 'partitions' ? [{ topic: s.topic, count: s.to }] : []));
  if (raise.length) await admin.createPartitions({ validateOnly: false, topicPartitions: raise });
  const byTopic = new Map<string, { name: string; value: string }[]>();
  for (const s of steps) if (s.kind === 'config') byTopic.set(s.topic, [...(byTopic.get(s.topic) ?? []), { name: s.name, value: s.to }]);
  for (const [name, entries] of byTopic) {
    await incrementalAlter(admin, name, entries);
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
