import { CompressionTypes, type Admin, type PartitionMetadata, type Producer } from 'kafkajs';
import { FastDefaultPartitioner } from './partitioner';

// kafkajs 2.2.4 retries a produce inside one sendBatch, but sends again only to the brokers
// that have not answered that sendBatch yet: when a broker dies, its partitions get a leader
// among the others, which have usually answered for their own partitions already, and the
// moved partitions' records are never sent while sendBatch resolves as if they were written.
// So each send is split by the broker that leads each record's partition, one sendBatch per
// broker (as many produce requests as kafkajs makes anyway): a retry then finds the new
// leader without an answer and sends to it. The partition is chosen here, as kafkajs would
// (the same partitioner), and given explicitly.

/** A record as sent; `partition` is set here (the objects are the send's own, built per send). */
export type OutRecord = { key: string | null; value: string | null; headers?: Record<string, string>; partition?: number };
export type TopicMessages = { topic: string; messages: OutRecord[] }[];

/** How long the partition leaders read for one topic are used before they are read again. */
const LEADERS_TTL_MS = 5000;

export class LeaderGroups {
  private readonly meta = new Map<string, { at: number; parts: Promise<PartitionMetadata[]> }>();
  private readonly partitioner = FastDefaultPartitioner();

  constructor(private readonly admin: () => Promise<Admin>) {}

  private partitionsOf(topic: string): Promise<PartitionMetadata[]> {
    const hit = this.meta.get(topic);
    if (hit && Date.now() - hit.at < LEADERS_TTL_MS) return hit.parts;
    const entry = { at: Date.now(), parts: this.admin().then(async (a) => (await a.fetchTopicMetadata({ topics: [topic] })).topics[0]?.partitions ?? []) };
    entry.parts.catch(() => this.meta.get(topic) === entry && this.meta.delete(topic));
    this.meta.set(topic, entry);
    return entry.parts;
  }

  /** Forgets the leaders: after a failed send they may have moved. */
  invalidate(): void {
    this.meta.clear();
  }

  /** The records split by the broker leading their partition, each with its partition set; unsplit when the leaders cannot be read. */
  async split(topicMessages: TopicMessages): Promise<TopicMessages[]> {
    const byLeader = new Map<number, Map<string, OutRecord[]>>();
    try {
      for (const { topic, messages } of topicMessages) {
        const parts = await this.partitionsOf(topic);
        if (!parts.length) return [topicMessages];
        const leaderOf = new Map(parts.map((p) => [p.partitionId, p.leader]));
        for (const m of messages) {
          const partition = (m.partition = this.partitioner({ topic, partitionMetadata: parts, message: m }));
          const leader = leaderOf.get(partition) ?? -1;
          let topics = byLeader.get(leader);
          if (!topics) byLeader.set(leader, (topics = new Map()));
          let list = topics.get(topic);
          if (!list) topics.set(topic, (list = []));
          list.push(m);
        }
      }
    } catch {
      return [topicMessages];
    }
    return [...byLeader.values()].map((topics) => [...topics].map(([topic, messages]) => ({ topic, messages })));
  }
}

/** One sendBatch per partition leader, acks=all; the leaders are read again after a failure. */
export const sendByLeader = async (p: Producer, groups: LeaderGroups, topicMessages: TopicMessages): Promise<void> => {
  const split = await groups.split(topicMessages);
  try {
    await Promise.all(split.map((tm) => p.sendBatch({ acks: -1, compression: CompressionTypes.None, topicMessages: tm })));
  } catch (e) {
    groups.invalidate();
    throw e;
  }
};
