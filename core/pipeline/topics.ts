import type { Config } from '../config/schema';
import type { TopicSpec } from '../ports/log';

// The one topic table: every topic name comes from here.
export type Topics = Config['kafka']['topics'];

export const topicSpecs = (c: Config): TopicSpec[] => {
  const t = c.kafka.topics;
  const p = c.kafka.partitions;
  const retentionMs = c.kafka.retention;
  const replicationFactor = c.kafka.replication_factor;
  const minInsyncReplicas = c.kafka.min_insync_replicas;
  return [
    { name: t.pending, partitions: p, retentionMs },
    { name: t.slow, partitions: p, retentionMs },
    { name: t.results, partitions: p, retentionMs },
    { name: t.deadletter, partitions: p, retentionMs },
    { name: t.state, partitions: p, compacted: true },
    { name: t.scripts, partitions: 1, compacted: true },
    // One partition each: every instance replays them whole, in order, into memory.
    { name: t.keys, partitions: 1, compacted: true },
    { name: t.config_secrets, partitions: 1, compacted: true },
    // Pauses and open circuits: small, replayed whole by a rebuild, in order per scope.
    { name: t.guards, partitions: 1, compacted: true },
    // The Svix API's model, replayed whole by every api instance; its messages, whose latest each instance keeps.
    { name: t.applications, partitions: 1, compacted: true },
    { name: t.messages, partitions: 1, retentionMs },
  ].map((s) => ({ ...s, replicationFactor, minInsyncReplicas }));
};

/** A spec with its replication decided: numbers, no `auto`. */
export type ResolvedTopicSpec = Omit<TopicSpec, 'replicationFactor' | 'minInsyncReplicas'> & { replicationFactor: number; minInsyncReplicas?: number };

/**
 * `auto` against the brokers that answer: three replicas when three or more brokers answer
 * (else one per broker), and min.insync.replicas 2 when there are three or more replicas
 * (else 1), so that with acks=all a write survives the loss of any one broker and writes go
 * on while one broker is down. A spec without a minimum keeps the broker's.
 */
export const resolveReplication = (s: TopicSpec, brokers: number): ResolvedTopicSpec => {
  const rf = s.replicationFactor === 'auto' ? Math.max(1, Math.min(3, brokers)) : (s.replicationFactor ?? 1);
  const { minInsyncReplicas: asked, ...rest } = s;
  const min = asked === 'auto' ? (rf >= 3 ? 2 : 1) : asked;
  return { ...rest, replicationFactor: rf, ...(min === undefined ? {} : { minInsyncReplicas: min }) };
};

/** Why topics of this spec cannot be created or written as asked with `brokers` answering, if they cannot. */
export const replicationProblem = (s: ResolvedTopicSpec, brokers: number): string | undefined => {
  if (s.replicationFactor > brokers) return `replication factor ${s.replicationFactor} asked but only ${brokers} broker(s) answer`;
  if (s.minInsyncReplicas !== undefined && s.minInsyncReplicas > s.replicationFactor)
    return `min.insync.replicas ${s.minInsyncReplicas} is above the replication factor ${s.replicationFactor}: every acks=all write would be refused`;
  return undefined;
};
