import { serve, type ServerType } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll } from 'vitest';
import { loadConfig } from '../../core/config/load';
import type { HotWriter, IdempotencyStore } from '../../core/ports/hot-state';
import { silentLogger } from '../../core/ports/logger';
import { restIdempotency } from '../../edge/upstash/idempotency';
import { createEdgeRedis, edgeHotState, type EdgeHotReads } from '../../edge/upstash/redis';
import { createBridgeApp } from '../../workers/bridge/app';
import { bridgeSettings } from '../../workers/bridge/config';
import { newCounters } from '../../workers/bridge/counters';
import type { KafkaRestProducer } from '../../workers/kafka/rest-producer';
import { createRedis } from '../../workers/redis/client';
import { RedisHotState } from '../../workers/redis/hot-state';
import type { Redis } from 'ioredis';
import { flushOwnDb, useRedisDb } from '../helpers/redis-db';
import { DEFAULT_TTLS, type MakeHotState } from './hot-state.fixtures';
import { connectionContract } from './hot-state.contract';
import { idempotencyContract } from './hot-state.contract-idempotency';
import { statsContract } from './hot-state.contract-stats';
import { statusContract } from './hot-state.contract-status';

// The edge's hot state (edge/upstash/redis.ts) implements only the roles its routes read,
// StatusReader and StatsReader (and ping), and its enqueue's IdempotencyStore, over the Upstash REST dialect: held here to the
// same suites as the Node adapters. RedisHotState writes; howk-bridge (in this process)
// serves the dialect over the same Redis db; the edge adapter reads through it.
const url = process.env.REDIS_URL;
if (!url) throw new Error('REDIS_URL is not set: the edge hot-state contract needs a real Redis (scripts/infra/redis.sh start prints one)');
const db = useRedisDb();
const TOKEN = 'edge-contract-token';

let bridgeRedis: Redis;
let server: ServerType;
let restUrl: string;

beforeAll(async () => {
  bridgeRedis = createRedis(url, { db: db() });
  const settings = bridgeSettings(loadConfig({ env: { HOWK_BRIDGE_KAFKA_PASSWORD: 'unused', HOWK_BRIDGE_REDIS_TOKEN: TOKEN } }));
  // Only /redis is used: the Kafka side never sees a request.
  const producer = {} as KafkaRestProducer;
  const app = createBridgeApp({ settings, producer, redis: bridgeRedis, counters: newCounters(), log: silentLogger });
  server = await new Promise<ServerType>((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  restUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/redis`;
});
afterAll(async () => {
  await new Promise<void>((r) => server?.close(() => r()));
  await bridgeRedis?.quit();
});

const make: MakeHotState<HotWriter & EdgeHotReads> = async (opts) => {
  const writer = new RedisHotState(createRedis(url, { db: db() }), { ...DEFAULT_TTLS, ...opts?.ttls });
  await flushOwnDb(bridgeRedis, db());
  const reads = edgeHotState(createEdgeRedis({ url: restUrl, token: TOKEN, timeoutMs: 5000 }));
  return {
    state: { apply: (batch) => writer.apply(batch), ...reads },
    clock: { now: () => Date.now() },
    cleanup: () => writer.close(),
  };
};

statusContract('edge (REST reads)', make);
statsContract('edge (REST reads)', make);
connectionContract('edge (REST reads)', make);

// Idempotency claims at the edge (edge/upstash/idempotency.ts): the same contract as howk-api's
// store, through the bridge's grants, on the keys howk-api uses.
const makeClaims: MakeHotState<IdempotencyStore> = async () => {
  await flushOwnDb(bridgeRedis, db());
  return { state: restIdempotency(createEdgeRedis({ url: restUrl, token: TOKEN, timeoutMs: 5000 })), clock: { now: () => Date.now() }, cleanup: async () => {} };
};
idempotencyContract('edge (REST claims)', makeClaims);
