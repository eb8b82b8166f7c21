import { defineConfig } from 'vitest/config';
import SlowFirstSequencer from './test/sequencer.js';

// Unit and memory-contract tests run in parallel. Integration files run one at a time unless
// HOWK_TEST_INTEGRATION_WORKERS says more (every file keeps to a Redis db, topics and consumer
// groups of its own, so files side by side share only the servers and the CPU; docs/TESTING.md);
// the other projects that talk to Kafka and Redis run one file at a time.
const integrationWorkers = Math.max(1, Number(process.env.HOWK_TEST_INTEGRATION_WORKERS ?? 1) || 1);

export default defineConfig({
  // `npm test` can run its projects in vitest processes side by side: each keeps its results cache
  // (durations, failures; they order the files) in a folder of its own, so that none reads a
  // cache file another is writing.
  ...(process.env.HOWK_TEST_CACHE_DIR ? { cacheDir: process.env.HOWK_TEST_CACHE_DIR } : {}),
  test: {
    sequence: { sequencer: SlowFirstSequencer },
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts', 'test/contract/**/*.{memory,sqlite}.test.ts'],
          testTimeout: 20_000,
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/contract/**/*.{redis,kafka}.test.ts', 'test/integration/**/*.test.ts', 'test/e2e/**/*.test.ts'],
          testTimeout: 120_000,
          hookTimeout: 120_000,
          fileParallelism: integrationWorkers > 1,
          maxWorkers: integrationWorkers,
        },
      },
      {
        // The console and the Lab in Debian's Chromium (headless) against howk-dev processes
        // (docs/CONSOLE.md); the global setup installs chromium when it is missing.
        test: {
          name: 'browser',
          include: ['test/browser/**/*.test.ts'],
          globalSetup: ['test/browser/setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 120_000,
          fileParallelism: false,
        },
      },
      {
        // Howk on three Kafka brokers of its own (scripts/infra/kafka-cluster.sh, started and
        // stopped by the test): replicated topics, the Log contract, a broker killed mid-produce,
        // `howk doctor` and `howk topics migrate` (docs/TESTING.md, "Scaled set-up"). The Redis
        // Cluster the files share is started once, by the global setup.
        test: {
          name: 'replicated',
          include: ['test/replicated/**/*.test.ts'],
          globalSetup: ['test/replicated/global-setup.ts'],
          testTimeout: 240_000,
          hookTimeout: 240_000,
          fileParallelism: false,
        },
      },
      {
        // Chaos (test/chaos, docs/RELIABILITY.md): on a Kafka broker and a Redis of its own
        // that it stops, kills and flushes. The ci profile runs in `npm test`; `npm run
        // test:chaos` sets HOWK_CHAOS_PROFILE=full (full sizes, each scenario 3x).
        test: {
          name: 'chaos',
          include: ['test/chaos/**/*.test.ts'],
          testTimeout: 3_600_000,
          hookTimeout: 300_000,
          fileParallelism: false,
        },
      },
      {
        // The edge: the wrangler-built Worker in Miniflare (workerd), howk-bridge and howk-worker
        // as processes on the real Kafka + Redis (docs/EDGE.md). One file at a time.
        test: {
          name: 'edge',
          include: ['test/edge/**/*.test.ts'],
          globalSetup: ['test/edge/helpers/build.ts'],
          testTimeout: 120_000,
          hookTimeout: 120_000,
          fileParallelism: false,
          // cluster.test.ts starts a Redis Cluster of its own when REDIS_CLUSTER_NODES is unset:
          // on other ports than the replicated project's, which may run beside it in lanes.
          env: { WRANGLER_SEND_METRICS: 'false', HOWK_REPLICATED_REDIS_PORT: '17130' },
        },
      },
    ],
  },
});
