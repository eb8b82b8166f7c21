import type { Config } from '../config/schema';
import type { TopicSpec } from '../ports/log';

// The one topic table: every topic name comes from here.
export type Topics = Config['kafka']['topics'];

export const topicSpecs = (c: Config): TopicSpec[] => {
  const t = c.kafka.topics;
  const p = c.kafka.partitions;
  const retentionMs = c.kafka.retention;
  const replicationFactor = c.kafka.replication_factor;
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
  ].map((s) => ({ ...s, replicationFactor }));
};
