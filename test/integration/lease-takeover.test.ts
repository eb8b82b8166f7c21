import { Kafka, logLevel } from 'kafkajs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config/load';
import { keys } from '../../core/domain/keys';
import { shardOf } from '../../core/domain/retry-shards';
import { encodeWebhook, type Webhook } from '../../core/records/webhook';
import { createDeliverer } from '../../core/pipeline/deliver';
import { runScheduler } from '../../core/pipeline/scheduler';
import { systemClock } from '../../core/ports/clock';
import type { HotState } from '../../core/ports/hot-state';
import type { ConsumedBatch, LogRecord } from '../../core/ports/log';
import { silentLogger } from '../../core/ports/logger';
import type { DeliveryResponse, Sender } from '../../core/ports/sender';
import { createRedis } from '../../workers/redis/client';
import { RedisHotState } from '../../workers/redis/hot-state';
import { KafkaLog } from '../../workers/kafka/log';
import { requireEnv, uniq, waitFor } from '../helpers/env';
import { hook } from '../helpers/reconcile-fixtures';
import { useRedisDb } from '../helpers/redis-db';

// The chain a killed worker's webhooks wait on when they were leased before their first
// attempt (queued in a lane behind a slow delivery): the worker's lease, a scheduler holding
// the lease's retry shard (its holder killed too), a claim a killed scheduler made. Real Kafka
// and Redis, real scheduler loops and the shipped leases (delivery.handoff_lease,
// scheduler.shard_lease, scheduler.lease): nothing here is set for the test but topics.

const redisDb = useRedisDb();
const brokers = requireEnv('KAFKA_BROKERS').split(',');
const prefix = uniq('lt');
const config = loadConfig({
  env: {},
  overrides: Object.fromEntries(['pending', 'slow', 'results', 'deadletter', 'state'].map((t) => [`kafka.topics.${t}`, `${prefix}-${t}`])),
});
const SHARDS = config.redis.retry_shards;
const TTLS = { status_ttl: 600_000, stats_ttl: 600_000, retry_data_ttl: 600_000, retry_shards: SHARDS };
const topics = () => Object.values(config.kafka.topics).filter((t) => t.startsWith(prefix));

/** An endpoint that answers only when told to (the slow delivery), and records what it was sent. */
const heldSender = () => {
  const sent: string[] = [];
  let answer: () => void = () => {};
  const answered = new Promise<void>((r) => (answer = r));
  const sender: Sender = {
    send: async (req): Promise<DeliveryResponse> => {
      sent.push(req.headers['webhook-id']!);
      await answered;
      return { kind: 'response', status: 200, retryAfter: null, bodySnippet: 'ok', durationMs: 1 };
    },
    close: async () => {},
  };
  return { sender, sent, answer };
};

/** A hot state that hangs every call once `dead` says so: a process killed with -9. */
const mortal = <T extends object>(t: T, dead: () => boolean): T =>
  new Proxy(t, { get: (o, p, r) => (dead() && typeof Reflect.get(o, p, r) === 'function' ? () => new Promise(() => {}) : Reflect.get(o, p, r)) });

describe('a killed worker and scheduler: their leases end within seconds', () => {
  let log: KafkaLog;
  const states: RedisHotState[] = [];
  const state = () => {
    const s = new RedisHotState(createRedis(requireEnv('REDIS_URL'), { db: redisDb() }), TTLS);
    states.push(s);
    return s;
  };
  const running: { stop: () => Promise<void> }[] = [];
  // Each test's schedulers are its own: the live ones give their shards back.
  afterEach(async () => void (await Promise.all(running.splice(0).map((r) => r.stop()))));
  beforeAll(async () => {
    log = new KafkaLog({ brokers, clientId: prefix, produceTimeoutMs: 10_000, maxWaitMs: 50, maxBytesPerPartition: 1 << 20 });
    await log.admin.ensureTopics(topics().map((name) => ({ name, partitions: 1 })));
  });
  afterAll(async () => {
    await Promise.all(running.map((r) => r.stop()));
    await Promise.all(states.map((s) => s.close()));
    await log?.close();
    const admin = new Kafka({ clientId: `${prefix}-cleanup`, brokers, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    await admin.deleteTopics({ topics: topics() }).catch(() => {});
    await admin.disconnect();
  });

  /** Every record a scheduler produced, with when. */
  const produced: { at: number; record: LogRecord; by: string }[] = [];
  const producedOf = (id: string) => produced.find((p) => p.record.value?.includes(id));
  /**
   * A scheduler loop (the shipped one). `kill` stops it as kill -9 would: its shard leases and
   * claims stay in Redis. `dieInProduce`: it dies in the middle of its first produce that
   * carries that webhook (claimed, never acked).
   */
  const scheduler = (owner: string, dieInProduce?: string) => {
    let dead = false;
    let diedAt: number | undefined;
    const hot = mortal(state(), () => dead);
    const producer = log.producer();
    const abort = new AbortController();
    const send = async (records: LogRecord[]) => {
      if (dieInProduce && records.some((r) => r.value?.includes(dieInProduce))) {
        dead = true;
        diedAt = Date.now();
        abort.abort();
        return new Promise<void>(() => {});
      }
      if (dead) return new Promise<void>(() => {});
      await producer.send(records);
      produced.push(...records.map((record) => ({ at: Date.now(), record, by: owner })));
    };
    const loop = runScheduler({ config, hot: hot as unknown as HotState, producer: { ...producer, send }, clock: systemClock, log: silentLogger, owner }, abort.signal);
    const s = {
      owner,
      diedAt: () => diedAt,
      kill: () => ((dead = true), abort.abort()),
      stop: async () => (abort.abort(), dead ? undefined : await loop),
    };
    running.push(s);
    return s;
  };
  const redisScore = async (id: string) => {
    const redis = createRedis(requireEnv('REDIS_URL'), { db: redisDb() });
    try {
      return await redis.zscore(keys.retryShard(shardOf(id, SHARDS)), id);
    } finally {
      redis.disconnect();
    }
  };
  const holders = async () => {
    const redis = createRedis(requireEnv('REDIS_URL'), { db: redisDb() });
    try {
      return await Promise.all(Array.from({ length: SHARDS }, (_, s) => redis.get(keys.retryShardLease(s))));
    } finally {
      redis.disconnect();
    }
  };

  const batch = (hooks: Webhook[]): ConsumedBatch => ({
    topic: config.kafka.topics.pending,
    partition: 0,
    records: hooks.map((h, i) => ({ topic: config.kafka.topics.pending, partition: 0, offset: String(i), key: h.config_id, value: encodeWebhook(h), timestamp: Date.now() })),
  });
  const webhook = (id: string, configId: string) => hook(id, { config_id: configId, endpoint: 'https://s.example.com/hook', endpoint_hash: 'ef'.repeat(16), attempt: 0 });
  /** A webhook queued in its lane behind a slow one of the same config: both leased once the lane stalls. */
  const stalledLane = async (name: string, sender: Sender, hot: HotState) => {
    const slow = webhook(`wh_${name}_slow`, `cfg_${name}`);
    const queued = webhook(`wh_${name}_queued`, `cfg_${name}`);
    const deliver = createDeliverer({ config, hot, producer: log.producer(), clock: systemClock, log: silentLogger, sender });
    await deliver(batch([slow, queued]));
    return { slow, queued, deliver };
  };

  it("a killed worker's webhook leased before its first attempt, its shard's scheduler killed too, is sent by another worker as soon as its lease ends", async () => {
    const a = scheduler(uniq('sched-a'));
    const b = scheduler(uniq('sched-b'));
    await waitFor(async () => new Set((await holders()).filter(Boolean)).size === 2, { timeoutMs: 30_000, what: 'the shards shared by two schedulers' });
    let workerDead = false;
    const { sender, sent } = heldSender();
    const { slow, queued } = await stalledLane('killed', sender, mortal(state(), () => workerDead) as unknown as HotState);
    // The slow one is on the wire; the queued one waits for its turn, leased, never attempted.
    expect(sent).toEqual([slow.id]);
    const holder = (await holders())[shardOf(queued.id, SHARDS)];
    const [victim, survivor] = holder === a.owner ? [a, b] : [b, a];
    expect(victim.owner).toBe(holder);
    const killedAt = Date.now();
    workerDead = true;
    victim.kill();
    // When the dead worker's lease comes due (its last renewal + delivery.handoff_lease).
    const leaseDue = Number(await redisScore(queued.id));
    expect(leaseDue).toBeGreaterThan(killedAt);
    await waitFor(() => producedOf(queued.id) !== undefined, { timeoutMs: 40_000, intervalMs: 50, what: `${queued.id} re-enqueued` });
    const copy = producedOf(queued.id)!;
    expect(copy.by).toBe(survivor.owner);
    // Another worker takes the re-enqueued copy from the pending topic and sends it.
    const other = heldSender();
    other.answer();
    const deliver = createDeliverer({ config, hot: state(), producer: log.producer(), clock: systemClock, log: silentLogger, sender: other.sender });
    await deliver({
      ...batch([]),
      records: [
        { ...copy.record, topic: config.kafka.topics.pending, partition: 0, offset: '0', key: copy.record.key ?? null, value: copy.record.value ?? null, timestamp: Date.now() },
      ],
    });
    expect(other.sent).toEqual([queued.id]);
    // The dead scheduler's shards are the survivor's before the lease comes due: the copy
    // follows within a pass. Before: the dead scheduler's shard lease (10 s, and up to a third
    // of it until the survivor's next renewal) came after the lease, 11.9 s from the kill.
    expect(copy.at - leaseDue).toBeLessThan(2_500);
    expect(copy.at - killedAt).toBeLessThan(config.delivery.handoff_lease + 2_500);
  }, 90_000);

  it('a scheduler killed between its claim and its ack: another moves what it claimed within 8 s', async () => {
    const w = webhook('wh_claimed', 'cfg_claimed');
    const victim = scheduler(uniq('sched-c'), w.id);
    await waitFor(async () => (await holders()).filter((h) => h === victim.owner).length === SHARDS, { timeoutMs: 30_000, what: 'every shard held by one scheduler' });
    const hot = state();
    await hot.apply({ retries: [{ id: w.id, dueAt: Date.now(), data: encodeWebhook(w) }] });
    // It claims the retry and dies in the produce: the claim (scheduler.lease) is all that is left.
    await waitFor(() => victim.diedAt() !== undefined, { timeoutMs: 10_000, what: 'claimed' });
    const claimedAt = victim.diedAt()!;
    const survivor = scheduler(uniq('sched-d'));
    await waitFor(() => producedOf(w.id) !== undefined, { timeoutMs: 60_000, intervalMs: 50, what: `${w.id} moved by the survivor` });
    expect(producedOf(w.id)!.by).toBe(survivor.owner);
    // Before: the 30 s claim lease.
    expect(producedOf(w.id)!.at - claimedAt).toBeLessThan(8_000);
  }, 90_000);

  it("a live worker's leases are never taken over, however long its slow delivery lasts", async () => {
    scheduler(uniq('sched-e'));
    scheduler(uniq('sched-f'));
    const { sender, sent, answer } = heldSender();
    const hot = state();
    const { slow, queued, deliver } = await stalledLane('live', sender, hot as unknown as HotState);
    expect(sent).toEqual([slow.id]);
    // Three leases long: only the renewals keep the schedulers off.
    await new Promise((r) => setTimeout(r, 3 * config.delivery.handoff_lease + 1000));
    expect(producedOf(slow.id)).toBeUndefined();
    expect(producedOf(queued.id)).toBeUndefined();
    answer();
    await waitFor(() => sent.length === 2, { timeoutMs: 10_000, what: 'the queued one sent by its own worker' });
    await deliver.drain();
    expect(sent).toEqual([slow.id, queued.id]);
    // Both outcomes written, both leases acked: nothing left to re-enqueue.
    await waitFor(async () => Number(await hot.retryCount()) === 0, { timeoutMs: 10_000, what: 'the leases acked' });
    await new Promise((r) => setTimeout(r, 1500));
    expect(produced.filter((p) => p.record.value?.includes('wh_live'))).toEqual([]);
  }, 90_000);
});
