import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config/load';
import { nowNs } from '../../core/domain/time';
import { encodeWebhook, type Webhook } from '../../core/records/webhook';
import { MemoryGuards } from '../../core/memory/guards';
import { MemoryHotState } from '../../core/memory/hot-state';
import { MemoryLog } from '../../core/memory/log';
import { MemoryTopicReader } from '../../core/memory/topic-reader';
import { createDeliverer } from '../../core/pipeline/deliver';
import { createHandoff } from '../../core/pipeline/handoff';
import { silentLogger } from '../../core/ports/logger';
import { snapshotValue } from '../../core/records/state';
import { systemClock } from '../../core/ports/clock';
import type { Guards } from '../../core/ports/guards';
import type { HotState } from '../../core/ports/hot-state';
import type { ConsumedBatch, LogProducer, LogRecord } from '../../core/ports/log';
import type { Sender } from '../../core/ports/sender';
import { createReconciler } from '../../core/reconcile/reconciler';
import { hook } from '../helpers/reconcile-fixtures';

// A FLUSHALL can land between a worker's two writes of one outcome: the retry in Redis and
// its snapshot on howk.state. If Redis is written first, the flush takes the retry, and a
// rebuild that reads howk.state before the (slow) snapshot arrives cannot bring it back: the
// batch then commits and the webhook is lost. Kafka first, then Redis, closes the window:
// whatever a flush can take from Redis is already below the high-water mark a rebuild
// reads to. (Found by reasoning over the chaos suite's FLUSHALL scenario.)

const config = loadConfig({ env: {} });
const topics = config.kafka.topics;
const TTLS = { status_ttl: 86_400_000, stats_ttl: 86_400_000, retry_data_ttl: 86_400_000 };

/** A Redis (hot state and guards) that can be flushed - replaced by an empty one - under the code that uses it. */
const flushable = () => {
  let current = new MemoryHotState(TTLS, systemClock);
  let guards = new MemoryGuards();
  const swappable = <T extends object>(get: () => T): T =>
    new Proxy({} as T, {
      get(_, prop) {
        const target = get();
        const v = Reflect.get(target, prop) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
  return {
    hot: swappable<HotState>(() => current),
    guards: swappable<Guards>(() => guards),
    flushall: () => {
      current = new MemoryHotState(TTLS, systemClock);
      guards = new MemoryGuards();
    },
  };
};

/** A log whose snapshots (howk.state records) wait for a gate: a produce that is slow to be acknowledged. */
const slowSnapshots = (log: MemoryLog) => {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let held!: () => void;
  const holding = new Promise<void>((r) => (held = r));
  const producer: LogProducer = {
    send: async (records: LogRecord[]) => {
      if (records.some((r) => r.topic === topics.state)) {
        held();
        await gate;
      }
      log.append(records);
    },
    close: async () => {},
  };
  return { producer, holding, release };
};

const refusing: Sender = { send: async () => ({ kind: 'response', status: 503, retryAfter: null, bodySnippet: 'no', durationMs: 1 }), close: async () => {} };

const scheduled = async (hot: HotState) => (await hot.claimDueRetries(Date.now() + 3_600_000, 100, 1)).map((r) => r.id);

/** The flush lands while the snapshot is on its way; then a rebuild runs to the end of howk.state. */
const flushAndRebuild = async (redis: ReturnType<typeof flushable>, log: MemoryLog) => {
  // Long enough for a Redis write started alongside the produce to have landed.
  await new Promise((r) => setTimeout(r, 50));
  redis.flushall();
  const reconciler = createReconciler({ config, hot: redis.hot, reader: new MemoryTopicReader(log), log: silentLogger, clock: systemClock, owner: 'rebuilder' });
  expect(await reconciler.ensureInitialized()).toBe('rebuilt');
};

/** Once the snapshot is on its way, the flush and a rebuild; then the snapshot lands. */
const flushWhileSnapshotHeld = async (redis: ReturnType<typeof flushable>, log: MemoryLog, slow: ReturnType<typeof slowSnapshots>) => {
  await slow.holding;
  await flushAndRebuild(redis, log);
  slow.release();
};

/** A batch of howk.pending holding `w` alone. */
const pendingBatch = (w: Webhook): ConsumedBatch => ({
  topic: topics.pending,
  partition: 0,
  records: [{ topic: topics.pending, partition: 0, offset: '0', key: w.config_id, value: encodeWebhook(w), timestamp: Date.now() }],
});

describe('a FLUSHALL between the two writes of an outcome loses nothing', () => {
  it('a retry scheduled by a batch survives, whatever the order the writes land in', async () => {
    const log = new MemoryLog(2);
    const redis = flushable();
    const slow = slowSnapshots(log);
    const deliver = createDeliverer({ config, hot: redis.hot, producer: slow.producer, clock: systemClock, log: silentLogger, sender: refusing });
    const w = hook('wh_race', { attempt: 1, max_attempts: 5 });
    const done = deliver(pendingBatch(w));
    await flushWhileSnapshotHeld(redis, log, slow);
    // The batch is done (its offset would be committed now): the retry must be scheduled.
    await done;
    expect(await scheduled(redis.hot)).toEqual(['wh_race']);
  });

  it('a retry a background delivery schedules survives too', async () => {
    const log = new MemoryLog(2);
    const redis = flushable();
    const slow = slowSnapshots(log);
    const handoff = createHandoff({ hot: redis.hot, producer: slow.producer, log: silentLogger, flushMs: 1 });
    const w = hook('wh_bg', { attempt: 2, max_attempts: 5 });
    const dueAt = Date.now() + 60_000;
    const data = encodeWebhook(w);
    handoff.taken(1);
    handoff.add({
      records: [{ topic: topics.state, key: w.id, value: snapshotValue(w, { webhook_id: w.id, updated_at_ns: nowNs(Date.now()) }, dueAt, data) }],
      hot: { retries: [{ id: w.id, dueAt, data }] },
      leases: [],
    });
    await flushWhileSnapshotHeld(redis, log, slow);
    await handoff.drain();
    expect(await scheduled(redis.hot)).toEqual(['wh_bg']);
  });

  it('a webhook held by a pause is delivered, held or scheduled afterwards - never nowhere', async () => {
    const log = new MemoryLog(2);
    const redis = flushable();
    const slow = slowSnapshots(log);
    const sent: string[] = [];
    const accepting: Sender = {
      send: async (r) => (sent.push(r.headers['webhook-id'] ?? '?'), { kind: 'response', status: 200, retryAfter: null, bodySnippet: 'ok', durationMs: 1 }),
      close: async () => {},
    };
    const deliver = createDeliverer({ config, hot: redis.hot, guards: redis.guards, producer: slow.producer, clock: systemClock, log: silentLogger, sender: accepting });
    const w = hook('wh_paused', { attempt: 0 });
    await redis.guards.pause({ kind: 'config', id: w.config_id });
    const done = deliver(pendingBatch(w));
    await flushWhileSnapshotHeld(redis, log, slow);
    await done;
    const held = await redis.guards.peekHeld({ kind: 'config', id: w.config_id }, 10);
    const where = [...(sent.length ? ['delivered'] : []), ...(held.length ? ['held'] : []), ...((await scheduled(redis.hot)).length ? ['scheduled'] : [])];
    expect(where).not.toEqual([]);
  });
});
