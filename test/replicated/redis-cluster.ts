import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Cluster, Redis } from 'ioredis';
import { clusterKeys, namespaced, type RedisKeys } from '../../core/domain/keys';
import { createRedis } from '../../workers/redis/client';

// The Redis Cluster of the cluster tests (3 masters + 3 replicas). REDIS_CLUSTER_NODES names a
// running one (a developer's, shared: never flushed, every test keeps to a key namespace of
// its own); without it scripts/infra/redis-cluster.sh starts one on ports of its own
// (HOWK_REPLICATED_REDIS_PORT, default 17100: nodes 17100-17105) and stops it after, so
// `npm test` on a fresh machine runs these tests too.

const run = promisify(execFile);
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const base = Number(process.env.HOWK_REPLICATED_REDIS_PORT ?? 17100);

let nodes: string[] = [];
let startedHere = false;

const script = async (cmd: string): Promise<string> => {
  const { stdout } = await run('bash', [join(root, 'scripts/infra/redis-cluster.sh'), cmd], {
    env: { ...process.env, REDIS_CLUSTER_PORT: String(base) },
    maxBuffer: 1 << 20,
    timeout: 120_000,
  });
  return stdout;
};

export const redisCluster = {
  /** The seed nodes (host:port); after start(). */
  nodes: (): string[] => nodes,
  start: async (): Promise<void> => {
    const given = process.env.REDIS_CLUSTER_NODES;
    if (given) {
      nodes = given.split(',').map((n) => n.trim());
      return;
    }
    const out = await script('start');
    const m = /^REDIS_CLUSTER_NODES=(.+)$/m.exec(out);
    if (!m) throw new Error(`redis-cluster.sh start did not report REDIS_CLUSTER_NODES: ${out}`);
    nodes = m[1]!.split(',');
    startedHere = true;
  },
  stop: async (): Promise<void> => {
    if (startedHere) await script('stop');
    startedHere = false;
  },
  client: (): Redis => createRedis('redis://127.0.0.1', { clusterNodes: nodes, onError: () => {} }),
};

/** A key namespace no other test or run uses, and the cluster layout under it. */
export const ownLayout = (): { ns: string; layout: RedisKeys } => {
  const ns = `t:${process.pid}:${randomBytes(4).toString('hex')}:`;
  return { ns, layout: namespaced(clusterKeys, ns) };
};

/** Deletes the namespace's keys on every master (never a flush: the cluster may be shared). */
export const dropNamespace = async (redis: Redis, ns: string): Promise<void> => {
  // A client that sent nothing yet has not learnt the slots (nor connected to the masters).
  await redis.ping();
  for (const node of (redis as unknown as Cluster).nodes('master')) {
    let cursor = '0';
    do {
      const [next, found] = await node.scan(cursor, 'MATCH', `${ns}*`, 'COUNT', 1000);
      cursor = next;
      for (const k of found) await node.del(k);
    } while (cursor !== '0');
  }
};
