import { redisCluster } from './redis-cluster';

// Vitest globalSetup of the replicated project: the Redis Cluster the files share (not the
// fault tests' own, which they kill) is started once for the project instead of once per file
// (about 15 s each), and named to the test files through REDIS_CLUSTER_NODES, as a developer's
// running cluster is. Each file keeps to a key namespace of its own (redis-cluster.ts,
// ownLayout), so sharing the cluster changes nothing a file sees. With REDIS_CLUSTER_NODES
// already set, that cluster is used and nothing is started.
export default async function setup(): Promise<() => Promise<void>> {
  const given = Boolean(process.env.REDIS_CLUSTER_NODES);
  const t0 = Date.now();
  await redisCluster.start();
  if (!given) {
    // The forked test workers inherit this process's environment.
    process.env.REDIS_CLUSTER_NODES = redisCluster.nodes().join(',');
    console.log(`[replicated] started the Redis Cluster ${process.env.REDIS_CLUSTER_NODES} in ${Date.now() - t0} ms`);
  }
  return async () => {
    await redisCluster.stop();
    if (!given) delete process.env.REDIS_CLUSTER_NODES;
  };
}
