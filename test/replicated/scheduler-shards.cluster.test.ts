import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../../core/config/load';
import { shardOf } from '../../core/domain/retry-shards';
import { encodeWebhook } from '../../core/records/webhook';
import { runScheduler } from '../../core/pipeline/scheduler';
import { systemClock } from '../../core/ports/clock';
import type { HotState } from '../../core/ports/hot-state';
import type { LogProducer } from '../../core/ports/log';
import { silentLogger } from '../../core/ports/logger';
import { RedisHotState } from '../../workers/redis/hot-state';
import { waitFor } from '../helpers/env';
import { DEFAULT_TTLS } from '../contract/hot-state.fixtures';
import { dropNamespace, ownLayout, redisCluster } from './redis-cluster';

// Three schedulers on a real Redis Cluster, each shard a slot of its own: every due retry moved
// once, and a killed scheduler's shards taken over once its lease has run out. The producer
// records what it is given (the pending topic is not what is tested here: scheduler-shards.test.ts
// runs the same on one Redis with Kafka).

beforeAll(() => redisCluster.start(), 240_000);
afterAll(() => redisCluster.stop(), 120_000);

const SHARDS = 16;
const SHARD_LEASE = 1_500;

it("3 schedulers move every due retry once; a killed one's shards are taken over after its lease", async () => {
  const { ns, layout } = ownLayout();
  const config = loadConfig({
    env: {},
    overrides: { 'scheduler.batch_size': 100, 'scheduler.poll_interval': 100, 'scheduler.shard_lease': SHARD_LEASE, 'redis.retry_shards': SHARDS },
  });
  const moved: string[] = [];
  const producer = { send: async (records: { value: string }[]) => void moved.push(...records.map((r) => (JSON.parse(r.value) as { id: string }).id)) } as unknown as LogProducer;
  const states: RedisHotState[] = [];
  const state = () => {
    const s = new RedisHotState(redisCluster.client(), { ...DEFAULT_TTLS, retry_shards: SHARDS }, layout);
    states.push(s);
    return s;
  };
  const admin = state();
  const raw = redisCluster.client();
  const retry = (id: string) => {
    const at = new Date().toISOString();
    const w = {
      id,
      config_id: `cfg_${id.length % 4}`,
      endpoint: 'http://127.0.0.1:9/x',
      endpoint_hash: 'h',
      payload: '{}',
      headers: {},
      attempt: 2,
      max_attempts: 5,
      deferrals: 0,
      created_at: at,
      scheduled_at: at,
    };
    return { id, dueAt: Date.now() - 10, data: encodeWebhook(w) };
  };
  const scheduler = (owner: string) => {
    const abort = new AbortController();
    let dead = false;
    const hot = state();
    const gated = new Proxy(hot, { get: (t, p) => (dead && p === 'releaseShards' ? async () => {} : (Reflect.get(t, p) as unknown)) }) as unknown as HotState;
    const loop = runScheduler({ config, hot: gated, producer, clock: systemClock, log: silentLogger, owner }, abort.signal);
    return { stop: async () => (abort.abort(), await loop), kill: async () => ((dead = true), abort.abort(), await loop) };
  };
  try {
    const first = Array.from({ length: 1500 }, (_, i) => `wh_c_${String(i).padStart(5, '0')}`);
    await admin.apply({ retries: first.map(retry) });
    const scheds = ['a', 'b', 'c'].map((o) => scheduler(`sched-${o}`));
    await waitFor(async () => (await admin.retryCount()) === 0 && moved.length >= 1500, { timeoutMs: 60_000, what: 'all moved' });
    // Wait for the shares to settle (every shard held, by all three), then kill c with the shards it holds.
    const holders = async () => Promise.all(Array.from({ length: SHARDS }, (_, s) => raw.get(layout.retryShardLease(s))));
    await waitFor(
      async () => {
        const h = await holders();
        return h.every(Boolean) && new Set(h).size === 3;
      },
      { timeoutMs: 20_000, what: 'the shards split three ways' },
    );
    const cShards = (await holders()).flatMap((o, s) => (o === 'sched-c' ? [s] : []));
    expect(cShards.length).toBeGreaterThan(0);
    await scheds[2]!.kill();
    const second = Array.from({ length: 4000 }, (_, i) => `wh_k_${String(i).padStart(5, '0')}`).filter((id) => cShards.includes(shardOf(id, SHARDS)));
    await admin.apply({ retries: second.map(retry) });
    await new Promise((r) => setTimeout(r, SHARD_LEASE / 3));
    expect(moved.length).toBe(1500);
    await waitFor(async () => (await admin.retryCount()) === 0 && moved.length >= 1500 + second.length, { timeoutMs: 60_000, what: "the killed one's shards moved" });
    await Promise.all([scheds[0]!.stop(), scheds[1]!.stop()]);
    expect(moved).toHaveLength(1500 + second.length);
    expect(new Set(moved)).toEqual(new Set([...first, ...second]));
  } finally {
    await dropNamespace(raw, ns).catch(() => {});
    raw.disconnect();
    await Promise.all(states.map((s) => s.close()));
  }
}, 120_000);
