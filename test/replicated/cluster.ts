import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Admin } from 'kafkajs';

// The three-broker Kafka of the replicated tests, started and stopped by
// scripts/infra/kafka-cluster.sh on ports of its own (HOWK_REPLICATED_KAFKA_PORT, default
// 19700: brokers 19700-19702, controllers 19710-19712), never the shared broker.

const run = promisify(execFile);
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const base = Number(process.env.HOWK_REPLICATED_KAFKA_PORT ?? 19700);
const env = { ...process.env, KAFKA_CLUSTER_PORT: String(base), KAFKA_CLUSTER_DIR: `/tmp/howk-replicated-kafka-${base}` };

const script = async (...args: string[]): Promise<string> => {
  const { stdout } = await run('bash', [join(root, 'scripts/infra/kafka-cluster.sh'), ...args], { env, maxBuffer: 1 << 20, timeout: 240_000 });
  return stdout;
};

export const cluster = {
  brokers: [0, 1, 2].map((i) => `127.0.0.1:${base + i}`),
  /** Node id (1..3) of the broker listening on `port`. */
  nodeOf: (port: number): number => port - base + 1,
  /** Clears what a crashed run left, then starts all three with empty logs. */
  start: async () => {
    await script('stop').catch(() => '');
    await script('start', '--fresh');
  },
  /** Starts the nodes that are not running (a killed one restarts with its data). */
  restart: () => script('start'),
  kill9: (node: number) => script('kill9', String(node)),
  stop: () => script('stop'),
};

/**
 * The node id of the broker coordinating `group`: the leader of __consumer_offsets partition
 * abs(hashCode(group)) % its partitions (the broker's rule; the topic exists once a group has joined).
 */
export const coordinatorOf = async (admin: Admin, group: string): Promise<number> => {
  let h = 0;
  for (let i = 0; i < group.length; i++) h = (Math.imul(31, h) + group.charCodeAt(i)) | 0;
  const parts = (await admin.fetchTopicMetadata({ topics: ['__consumer_offsets'] })).topics[0]!.partitions;
  return parts.find((p) => p.partitionId === Math.abs(h) % parts.length)!.leader;
};
