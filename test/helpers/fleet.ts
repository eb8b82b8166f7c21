import { loadConfig } from '../../core/config/load';
import type { Config } from '../../core/config/schema';
import { MemoryGuards } from '../../core/memory/guards';
import { MemoryHotState } from '../../core/memory/hot-state';
import { MemoryLog } from '../../core/memory/log';
import { createLogger, silentLogger, type Logger } from '../../core/ports/logger';
import { topicSpecs } from '../../core/pipeline/topics';
import { systemClock } from '../../core/ports/clock';
import type { Guards } from '../../core/ports/guards';
import type { EndedLookup, HotState } from '../../core/ports/hot-state';
import type { ConsumedRecord, Log } from '../../core/ports/log';
import { createSecretBox } from '../../core/signing/secret-box';
import { KafkaLog } from '../../workers/kafka/log';
import { startFleet, type Fleet } from '../../workers/node/fleet';
import { createHttpSender } from '../../workers/node/sender';
import { createRedis } from '../../workers/redis/client';
import { RedisGuards } from '../../workers/redis/guards';
import { RedisHotState } from '../../workers/redis/hot-state';
import { redisKv } from '../../workers/redis/lua-kv';
import { redisInboundReplays } from '../../workers/redis/inbound-replays';
import type { InboundReplays } from '../../core/ports/inbound-replays';
import { redisOutcomeBus } from '../../workers/redis/outcome-bus';
import { redisEndedLookup } from '../../workers/redis/ended-lookup';
import type { OutcomeBus } from '../../core/ports/outcome-bus';
import type { KvStore } from '../../core/lua';
import { requireEnv, uniq } from './env';
import { releaseRedisDb, takeRedisDb } from './redis-db';

export const TEST_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
export const TEST_SECRETS_KEY = Buffer.alloc(32, 7).toString('base64');

export type Mode = 'kafka' | 'memory';

export type TestFleet = {
  mode: Mode;
  config: Config;
  fleet: Fleet;
  baseUrl: string;
  hot: HotState;
  guards: Guards;
  logStore: Log;
  /** The Redis db of a kafka fleet (its own from takeRedisDb when none was given). */
  redisDb?: number;
  /** Every record seen so far on a topic (collected from the start of the fleet). */
  records(topic: keyof Config['kafka']['topics']): ConsumedRecord[];
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<Response>;
  stop(): Promise<void>;
};

export const testConfig = (mode: Mode, overrides: Record<string, unknown> = {}): Config => {
  const prefix = uniq('t');
  return loadConfig({
    env: {},
    overrides: {
      'api.port': 0,
      'api.host': '127.0.0.1',
      'kafka.brokers': mode === 'kafka' ? requireEnv('KAFKA_BROKERS').split(',') : ['memory'],
      'kafka.partitions': 4,
      'kafka.consumer_group': `${prefix}-workers`,
      'kafka.max_wait': 20,
      'kafka.topics': {
        pending: `${prefix}.pending`,
        slow: `${prefix}.slow`,
        results: `${prefix}.results`,
        deadletter: `${prefix}.deadletter`,
        state: `${prefix}.state`,
        scripts: `${prefix}.scripts`,
        keys: `${prefix}.keys`,
        config_secrets: `${prefix}.config-secrets`,
        guards: `${prefix}.guards`,
        applications: `${prefix}.applications`,
        messages: `${prefix}.messages`,
      },
      'retry.base_delay': 200,
      'retry.jitter': 0,
      'scheduler.poll_interval': 25,
      'signing.default_secret': TEST_SECRET,
      'delivery.timeout': 5000,
      // Test fleets deliver to loopback receivers and run without API keys unless a test opts in.
      'delivery.allowed_networks': ['127.0.0.0/8', '::1/128'],
      'api.auth.enabled': false,
      ...overrides,
    },
  });
};

/** A whole fleet (api + worker + scheduler) in this process, on real Kafka + Redis or on the in-memory adapters. */
export const startTestFleet = async (
  mode: Mode,
  opts: {
    overrides?: Record<string, unknown>;
    redisDb?: number;
    roles?: { api?: boolean; worker?: boolean; scheduler?: boolean };
    config?: Config;
    log?: Logger;
    /** The worker looks up ended statuses for batches that may have been consumed before, as howk-worker does (kafka mode). */
    endedLookup?: boolean;
  } = {},
): Promise<TestFleet> => {
  const config = opts.config ?? testConfig(mode, opts.overrides);
  const log = opts.log ?? (process.env.HOWK_TEST_LOGS ? createLogger('test', 'debug') : silentLogger);
  const secretBox = await createSecretBox('k1', { k1: TEST_SECRETS_KEY });
  const sender = createHttpSender({ connectionsPerOrigin: config.delivery.max_conns_per_host, snippetBytes: 1024, allowedNetworks: config.delivery.allowed_networks });
  let hot: HotState;
  let guards: Guards;
  let logStore: Log;
  let luaKv: KvStore | undefined;
  let inboundReplays: InboundReplays | undefined;
  let outcomes: (OutcomeBus & { close(): Promise<void> }) | undefined;
  let ended: EndedLookup | undefined;
  const collected = new Map<string, ConsumedRecord[]>();
  let stopCollector = async () => {};
  let redisDb: number | undefined;
  let releaseDb = async () => {};
  if (mode === 'kafka') {
    redisDb = opts.redisDb;
    if (redisDb === undefined) {
      const own = (redisDb = await takeRedisDb());
      releaseDb = () => releaseRedisDb(own);
    }
    const redis = createRedis(requireEnv('REDIS_URL'), { db: redisDb, commandTimeoutMs: config.redis.command_timeout });
    if (!opts.config) await redis.flushdb();
    hot = new RedisHotState(redis, {
      status_ttl: config.ttl.status_ttl,
      stats_ttl: config.ttl.stats_ttl,
      retry_data_ttl: config.ttl.retry_data_ttl,
      retry_shards: config.redis.retry_shards,
    });
    const endedLookup = opts.endedLookup ? redisEndedLookup(redis) : undefined;
    ended = endedLookup;
    // As workers/node/adapters.ts wires them: sent marks ride the guards calls.
    guards = new RedisGuards(redis, undefined, endedLookup?.riding);
    luaKv = redisKv(redis);
    inboundReplays = redisInboundReplays(redis);
    outcomes = redisOutcomeBus(redis);
    logStore = new KafkaLog({
      brokers: config.kafka.brokers,
      clientId: 'test',
      produceTimeoutMs: config.kafka.produce_timeout,
      maxWaitMs: 20,
      maxBytesPerPartition: 1 << 20,
      partitionsConsumedConcurrently: 4,
    });
    await logStore.admin.ensureTopics(topicSpecs(config));
    const t = config.kafka.topics;
    const collector = logStore.consumer({ groupId: uniq('collector'), topics: [t.results, t.deadletter, t.state, t.pending, t.slow], fromBeginning: true });
    await collector.run(async (b) => {
      collected.set(b.topic, [...(collected.get(b.topic) ?? []), ...b.records]);
    });
    stopCollector = () => collector.stop();
  } else {
    hot = new MemoryHotState(
      { status_ttl: config.ttl.status_ttl, stats_ttl: config.ttl.stats_ttl, retry_data_ttl: config.ttl.retry_data_ttl, retry_shards: config.redis.retry_shards },
      systemClock,
    );
    logStore = new MemoryLog();
    guards = new MemoryGuards();
  }
  const fleet = await startFleet({ config, logStore, hot, sender, log, secretBox, guards, roles: opts.roles, luaKv, inboundReplays, outcomes, ended });
  const baseUrl = fleet.baseUrl ?? '';
  return {
    mode,
    config,
    fleet,
    baseUrl,
    hot,
    guards,
    logStore,
    redisDb,
    records: (topic) => {
      const name = config.kafka.topics[topic];
      return mode === 'memory' ? (logStore as MemoryLog).records(name) : (collected.get(name) ?? []);
    },
    post: (path, body, headers = {}) =>
      fetch(baseUrl + path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) }),
    stop: async () => {
      await fleet.stop();
      await stopCollector();
      await logStore.close();
      await sender.close();
      await outcomes?.close();
      await hot.close();
      await releaseDb();
    },
  };
};
