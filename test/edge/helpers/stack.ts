import { Miniflare } from 'miniflare';
import { beforeAll } from 'vitest';
import { join } from 'node:path';
import { unstable_getMiniflareWorkerOptions } from 'wrangler';
import { loadConfig } from '../../../core/config/load';
import type { Config } from '../../../core/config/schema';
import { topicSpecs } from '../../../core/pipeline/topics';
import type { ConsumedRecord } from '../../../core/ports/log';
import { KafkaLog } from '../../../workers/kafka/log';
import { requireEnv, uniq, waitFor } from '../../helpers/env';
import { TEST_SECRET } from '../../helpers/fleet';
import { redisUrlOf, useRedisDb } from '../../helpers/redis-db';
import { freePort, spawnRole, stopProc, type Proc } from '../../helpers/procs';
import { edgeBundleDir, root } from './paths';

// The real pieces of an edge deployment, on this machine: howk-bridge and howk-worker as
// processes on the shared Kafka + Redis, and the wrangler-built Worker in Miniflare.

export const BRIDGE_PASSWORD = 'bridge-pass-for-tests';
export const BRIDGE_TOKEN = 'bridge-token-for-tests';

/**
 * HOWK_* env of a fleet with its own topics and consumer group (every topic of the table, also ones added later).
 * No HOWK_REDIS_URL: a describe whose processes use Redis calls useFleetRedisDb(env).
 */
export const fleetEnv = (prefix = uniq('edge')): Record<string, string> => {
  const topics = loadConfig({ env: {} }).kafka.topics;
  return {
    HOWK_KAFKA_BROKERS: requireEnv('KAFKA_BROKERS'),
    ...Object.fromEntries(Object.keys(topics).map((k) => [`HOWK_KAFKA_TOPICS_${k.toUpperCase()}`, `${prefix}.${k}`])),
    HOWK_KAFKA_CONSUMER_GROUP: `${prefix}-workers`,
    HOWK_KAFKA_PARTITIONS: '4',
    HOWK_KAFKA_MAX_WAIT: '20ms',
    HOWK_SIGNING_DEFAULT_SECRET: TEST_SECRET,
    HOWK_DELIVERY_ALLOWED_NETWORKS: '127.0.0.0/8,::1/128',
    HOWK_API_AUTH_ENABLED: 'false',
    HOWK_RETRY_BASE_DELAY: '200ms',
    HOWK_RETRY_JITTER: '0',
    HOWK_SCHEDULER_POLL_INTERVAL: '50ms',
    HOWK_LOG_LEVEL: 'warn',
  };
};

/** A Redis db of the describe's own (useRedisDb), set as env.HOWK_REDIS_URL before the describe's other beforeAll hooks. */
export const useFleetRedisDb = (env: Record<string, string>): (() => number) => {
  const db = useRedisDb();
  beforeAll(() => {
    env.HOWK_REDIS_URL = redisUrlOf(db());
  });
  return db;
};

export const configOf = (env: Record<string, string>): Config => loadConfig({ env });

export const ensureTopics = async (env: Record<string, string>): Promise<void> => {
  const log = new KafkaLog({ brokers: env.HOWK_KAFKA_BROKERS!.split(','), clientId: 'edge-test-admin', produceTimeoutMs: 5000, maxWaitMs: 20, maxBytesPerPartition: 1 << 20 });
  await log.admin.ensureTopics(topicSpecs(configOf(env)));
  await log.close();
};

export type Bridge = { url: string; proc: Proc; env: Record<string, string>; stats(): Promise<BridgeStats>; stop(): Promise<void> };
export type BridgeStats = { produce_calls: number; produce_records: number; produce_failures: number; redis_requests: number; redis_commands: number };

export const bridgeAuth = `Basic ${Buffer.from(`howk:${BRIDGE_PASSWORD}`).toString('base64')}`;

export const startBridge = async (env: Record<string, string>, port?: number, extra: Record<string, string> = {}): Promise<Bridge> => {
  const p = port ?? (await freePort());
  const benv = { ...env, HOWK_BRIDGE_PORT: String(p), HOWK_BRIDGE_KAFKA_PASSWORD: BRIDGE_PASSWORD, HOWK_BRIDGE_REDIS_TOKEN: BRIDGE_TOKEN, ...extra };
  const proc = spawnRole('bridge', benv);
  const url = `http://127.0.0.1:${p}`;
  await waitFor(async () => (await fetch(`${url}/health`).catch(() => undefined))?.ok, { timeoutMs: 30_000, what: `howk-bridge up\n${proc.output()}` });
  return {
    url,
    proc,
    env: benv,
    stats: async () => (await (await fetch(`${url}/stats`, { headers: { authorization: bridgeAuth } })).json()) as BridgeStats,
    stop: () => stopProc(proc),
  };
};

/** Edge vars that point the Worker at a bridge and at the fleet's topics. */
export const edgeVars = (env: Record<string, string>, bridgeUrl: string, extra: Record<string, string> = {}): Record<string, string> => ({
  ...Object.fromEntries(Object.entries(env).filter(([k]) => k.startsWith('HOWK_KAFKA_TOPICS_') || k === 'HOWK_API_AUTH_ENABLED')),
  HOWK_LOG_LEVEL: 'error',
  HOWK_EDGE_KAFKA_REST_URL: `${bridgeUrl}/kafka`,
  HOWK_EDGE_KAFKA_REST_USERNAME: 'howk',
  HOWK_EDGE_KAFKA_REST_PASSWORD: BRIDGE_PASSWORD,
  HOWK_EDGE_REDIS_REST_URL: `${bridgeUrl}/redis`,
  HOWK_EDGE_REDIS_REST_TOKEN: BRIDGE_TOKEN,
  ...extra,
});

export type Edge = {
  url: string;
  mf: Miniflare;
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<Response>;
  gateStats(host: string): Promise<any>;
  stop(): Promise<void>;
};

/**
 * The wrangler-built Worker (test/edge/helpers/build.ts) in Miniflare, with wrangler.toml's
 * bindings and these vars. `persist`: a directory keeping the Durable Objects' storage, so
 * that a Worker started again on it finds what the previous one stored.
 */
export const startEdge = async (vars: Record<string, string>, o: { persist?: string } = {}): Promise<Edge> => {
  const { workerOptions } = unstable_getMiniflareWorkerOptions(join(root, 'wrangler.toml'), '');
  const mf = new Miniflare({
    ...(workerOptions as object),
    name: 'howk-edge',
    modules: true,
    scriptPath: join(edgeBundleDir, 'worker.js'),
    bindings: { ...(workerOptions.bindings as Record<string, string>), ...vars },
    host: '127.0.0.1',
    // Port 0: workerd binds a free port itself. A port picked beforehand can be taken by
    // another test file before workerd binds it (ERR_ADDRESS_IN_USE).
    port: 0,
    ...(o.persist ? { durableObjectsPersist: o.persist } : {}),
  } as ConstructorParameters<typeof Miniflare>[0]);
  const url = (await mf.ready).toString().replace(/\/$/, '');
  return {
    url,
    mf,
    post: (path, body, headers = {}) =>
      fetch(url + path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) }),
    gateStats: async (host) => {
      const ns = await mf.getDurableObjectNamespace('GATE');
      const res = await ns.get(ns.idFromName(host)).fetch('https://domain-gate.internal/stats');
      return res.json();
    },
    stop: () => mf.dispose(),
  };
};

/** Every record of some topics, from the beginning, as a growing list per topic. */
export const collect = async (env: Record<string, string>, topics: string[]) => {
  const log = new KafkaLog({ brokers: env.HOWK_KAFKA_BROKERS!.split(','), clientId: 'edge-test-collector', produceTimeoutMs: 5000, maxWaitMs: 20, maxBytesPerPartition: 1 << 20 });
  const seen = new Map<string, ConsumedRecord[]>(topics.map((t) => [t, []]));
  const c = log.consumer({ groupId: uniq('edge-collector'), topics, fromBeginning: true });
  await c.run(async (b) => {
    seen.get(b.topic)!.push(...b.records);
  });
  return {
    of: (topic: string) => seen.get(topic) ?? [],
    stop: async () => {
      await c.stop();
      await log.close();
    },
  };
};
