import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config/load';
import { MemoryHotState } from '../../core/memory/hot-state';
import { MemoryLog } from '../../core/memory/log';
import { MemoryTopicReader } from '../../core/memory/topic-reader';
import { createHandoff } from '../../core/pipeline/handoff';
import { silentLogger } from '../../core/ports/logger';
import type { HotState } from '../../core/ports/hot-state';
import type { TopicReader } from '../../core/ports/recovery';
import { createReconciler, deferred } from '../../core/reconcile/reconciler';
import { pausableClaims, sentinelCheck } from '../../core/reconcile/sentinel';
import { T0, deadLetter, hook, snapshot, stamp, statusFor, tombstone } from '../helpers/reconcile-fixtures';

// The rebuild protocol (canary, lock, wait) and what a rebuild restores, on the in-memory
// adapters with a fake clock: sleeping advances the clock instead of waiting.

const config = loadConfig({ env: {}, overrides: { 'kafka.topics': { state: 's.state', deadletter: 's.dl' }, 'reconciler.restore_batch': 2 } });
const TTLS = { status_ttl: 7 * 86_400_000, stats_ttl: 86_400_000, retry_data_ttl: 7 * 86_400_000 };

const world = () => {
  let now = T0 + 60_000;
  const clock = { now: () => now };
  const sleep = async (ms: number) => {
    now += ms;
    await new Promise((r) => setTimeout(r, 1));
  };
  const log = new MemoryLog(2);
  const hot = new MemoryHotState(TTLS, clock);
  const reader = new MemoryTopicReader(log);
  const reconciler = (owner: string, over: { hot?: HotState; reader?: TopicReader } = {}) =>
    createReconciler({ config, hot: over.hot ?? hot, reader: over.reader ?? reader, log: silentLogger, clock, owner, sleep });
  const state = (...recs: { key: string; value: string | null }[]) => log.append(recs.map((r) => ({ topic: 's.state', ...r })));
  const dead = (id: string, record: string) => log.append([{ topic: 's.dl', key: id, value: record }]);
  return { clock, advance: (ms: number) => (now += ms), sleep, log, hot, reader, reconciler, state, dead };
};

const allRetries = async (hot: HotState, now: number) => (await hot.claimDueRetries(now + 86_400_000, 1000, 1)).map((r) => r.id).sort();

describe('reconciler: start-up check', () => {
  it('goes on at once when the canary is present, reading nothing', async () => {
    const w = world();
    await w.hot.markInitialized('x');
    let reads = 0;
    const reader: TopicReader = { readToEnd: async () => (reads++, { records: 0, partitions: 0, idled: [] }), close: async () => {} };
    expect(await w.reconciler('a', { reader }).ensureInitialized()).toBe('present');
    expect(reads).toBe(0);
  });

  it('canary missing: takes the lock, rebuilds, sets the canary and releases the lock', async () => {
    const w = world();
    const retrying = hook('wh_b', { attempt: 2 });
    w.state(snapshot(hook('wh_a', { attempt: 1 }), stamp(T0, 1)), snapshot(retrying, stamp(T0, 2), T0 + 5_000), tombstone('wh_a'));
    expect(await w.reconciler('a').ensureInitialized()).toBe('rebuilt');
    expect(await w.hot.isInitialized()).toBe(true);
    expect(await w.hot.acquireLock('someone-else', 1000)).toBe(true);
    expect(await allRetries(w.hot, w.clock.now())).toEqual(['wh_b']);
    expect(await w.hot.getStatus('wh_b')).toMatchObject({ state: 'retrying', attempts: 2, updated_at_ns: stamp(T0, 2) });
    expect(await w.hot.getStatus('wh_a')).toBeNull();
  });

  it('a delivered webhook never reappears after a rebuild (compaction not run), not even after two', async () => {
    const w = world();
    const a = hook('wh_delivered', { attempt: 1 });
    // Attempt 0 failed (snapshot), attempt 1 delivered (tombstone); the log still holds both.
    w.state(snapshot(a, stamp(T0, 1)), tombstone('wh_delivered'));
    const r = w.reconciler('a');
    await r.ensureInitialized();
    const again = await r.forceRebuild();
    expect(again.state).toMatchObject({ snapshots: 1, tombstones: 1, live: 0, restored: 0 });
    expect(await w.hot.retryCount()).toBe(0);
    expect(await w.hot.getStatus('wh_delivered')).toBeNull();
  });

  it('one instance rebuilds while the others wait for the canary', async () => {
    const w = world();
    w.state(snapshot(hook('wh_b'), stamp(T0)));
    let reads = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const slow: TopicReader = {
      readToEnd: async (topic, onBatch, o) => {
        reads++;
        await gate;
        return w.reader.readToEnd(topic, onBatch, o);
      },
      close: async () => {},
    };
    const first = w.reconciler('a', { reader: slow }).ensureInitialized();
    await new Promise((r) => setImmediate(r));
    const second = w.reconciler('b', { reader: slow }).ensureInitialized();
    await new Promise((r) => setTimeout(r, 20));
    release();
    expect(await Promise.all([first, second])).toEqual(['rebuilt', 'waited']);
    // Each rebuild reads the state topic and the dead-letter topic once.
    expect(reads).toBe(2);
    expect(await w.hot.retryCount()).toBe(1);
  });

  it('a waiter takes over when the rebuilding instance died holding the lock', async () => {
    const w = world();
    w.state(snapshot(hook('wh_b'), stamp(T0)));
    expect(await w.hot.acquireLock('dead-instance', config.reconciler.lock_ttl)).toBe(true);
    const t0 = w.clock.now();
    expect(await w.reconciler('b').ensureInitialized()).toBe('rebuilt');
    expect(w.clock.now() - t0).toBeGreaterThanOrEqual(config.reconciler.lock_ttl);
    expect(await w.hot.retryCount()).toBe(1);
  });

  it('retries with backoff when the hot state fails mid-rebuild, and frees the lock meanwhile', async () => {
    const w = world();
    w.state(snapshot(hook('wh_b'), stamp(T0)));
    let failures = 1;
    const flaky = new Proxy(w.hot, {
      get(t, p) {
        if (p === 'restore' && failures > 0) {
          failures--;
          return async () => {
            throw new Error('redis went away');
          };
        }
        const v = Reflect.get(t, p) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(t) : v;
      },
    });
    expect(await w.reconciler('a', { hot: flaky }).ensureInitialized()).toBe('rebuilt');
    expect(await w.hot.retryCount()).toBe(1);
    expect(await w.hot.acquireLock('other', 1000)).toBe(true);
  });
});

describe('reconciler: what a rebuild restores', () => {
  it('never replaces a status written live since, nor its schedule, and never doubles a retry', async () => {
    const w = world();
    const live = hook('wh_live', { attempt: 3 });
    w.state(snapshot(hook('wh_live', { attempt: 2 }), stamp(T0, 1), T0 + 1_000), snapshot(hook('wh_sched', { attempt: 1 }), stamp(T0, 2), T0 + 2_000));
    // Written by the fleet after the snapshots (newer stamp, its own schedule), and a retry
    // scheduled live for wh_sched whose status the flush lost.
    await w.hot.apply({
      statuses: [{ status: statusFor(live, stamp(T0 + 10, 0), { attempts: 3 }) }],
      retries: [
        { id: 'wh_live', dueAt: T0 + 9_000, data: 'live-data' },
        { id: 'wh_sched', dueAt: T0 + 8_000, data: 'live-sched' },
      ],
    });
    const s = await w.reconciler('a').forceRebuild();
    expect(s.state.restored).toBe(1);
    expect((await w.hot.getStatus('wh_live'))?.attempts).toBe(3);
    const claimed = await w.hot.claimDueRetries(w.clock.now() + 60_000, 10, 1);
    expect(claimed.map((r) => [r.id, r.data]).sort()).toEqual([
      ['wh_live', 'live-data'],
      ['wh_sched', 'live-sched'],
    ]);
  });

  it('makes dead letters listable again and restores the status of the webhooks they ended', async () => {
    const w = world();
    const d = hook('wh_dead', { attempt: 4, max_attempts: 5 });
    w.state(snapshot(d, stamp(T0, 1)), tombstone('wh_dead'));
    w.dead('wh_dead', deadLetter(d, T0 + 500));
    w.dead('x', '{"reason_type":"invalid_record","reason":"undecodable","raw":"?"}');
    const s = await w.reconciler('a').forceRebuild();
    expect(s.deadletters).toMatchObject({ records: 2, indexed: 1, restored: 1 });
    expect(await w.hot.getStatus('wh_dead')).toMatchObject({ state: 'exhausted', attempts: 5, dead_reason: 'exhausted', last_status_code: 503 });
    const page = await w.hot.listDeadLetters({ configId: 'cfg_r', limit: 10 });
    expect(page.items.map((r) => JSON.parse(r).webhook_id)).toEqual(['wh_dead']);
  });

  it('does not restore the dead status of a webhook retried after its dead letter', async () => {
    const w = world();
    const d = hook('wh_r', { attempt: 2, max_attempts: 3 });
    w.dead('wh_r', deadLetter(d, T0 + 500));
    // POST /webhooks/:id/retry wrote a snapshot with more progress; the retry was then delivered.
    w.state(snapshot(d, stamp(T0, 1)), tombstone('wh_r'), snapshot(hook('wh_r', { attempt: 3, max_attempts: 4 }), stamp(T0 + 900)), tombstone('wh_r'));
    await w.reconciler('a').forceRebuild();
    expect(await w.hot.getStatus('wh_r')).toBeNull();
    expect(await w.hot.getDeadLetter('wh_r')).not.toBeNull();
  });
});

describe('restored retries that were due already', () => {
  it('wait restore_delay (copies on their way come first); later ones keep their time', async () => {
    const item = (dueAt: number) => ({ status: statusFor(hook('wh_x'), stamp(T0)), retry: { id: 'wh_x', dueAt, data: 'd' } });
    expect(deferred(item(T0 - 5), T0, 30_000).retry!.dueAt).toBe(T0 + 30_000);
    expect(deferred(item(T0), T0, 30_000).retry!.dueAt).toBe(T0 + 30_000);
    // Due later (e.g. a lease): its time stands.
    expect(deferred(item(T0 + 10_000), T0, 30_000).retry!.dueAt).toBe(T0 + 10_000);
    expect(deferred({ status: item(0).status }, T0, 30_000)).toEqual({ status: item(0).status });
  });

  it('a rebuild schedules them at now + restore_delay', async () => {
    const w = world();
    w.state(snapshot(hook('wh_b'), stamp(T0), T0));
    await w.reconciler('a').ensureInitialized();
    expect(await w.hot.claimDueRetries(w.clock.now() + config.reconciler.restore_delay - 1, 10, 1)).toEqual([]);
    expect((await w.hot.claimDueRetries(w.clock.now() + config.reconciler.restore_delay, 10, 1)).map((r) => r.id)).toEqual(['wh_b']);
  });
});

describe('terminal outcomes and leases', () => {
  it("a finished straggler's schedule stays until its outcome is on Kafka, then goes even if it is not the lease", async () => {
    const w = world();
    // The lease, then a schedule a rebuild restored for it at another time (the ack will not match it).
    await w.hot.apply({ retries: [{ id: 'wh_s', dueAt: w.clock.now() + 15_000, data: 'lease' }] });
    await w.hot.apply({ retries: [{ id: 'wh_s', dueAt: w.clock.now() + 40_000, data: 'restored' }] });
    let produceOk = false;
    const producer = { send: async () => (produceOk ? undefined : Promise.reject(new Error('kafka away'))), close: async () => {} };
    const handoff = createHandoff({ hot: w.hot, producer, log: silentLogger, flushMs: 1 });
    handoff.taken(1);
    handoff.add({
      records: [{ topic: 'r', key: 'wh_s', value: '{}' }],
      hot: { statuses: [{ status: statusFor(hook('wh_s'), stamp(T0), { state: 'failed' }) }], ended: ['wh_s'] },
      leases: [{ id: 'wh_s', leaseDueAt: w.clock.now() + 15_000, leaseWritten: Promise.resolve() }],
    });
    await new Promise((r) => setTimeout(r, 150));
    // Killed now, the scheduler would re-enqueue it when the lease runs out: nothing lost.
    expect(await w.hot.retryCount()).toBe(1);
    produceOk = true;
    await handoff.drain();
    expect(await w.hot.retryCount()).toBe(0);
  });
});

describe('sentinel', () => {
  const pausable = (events: string[], name: string) => ({ pause: () => events.push(`pause ${name}`), resume: () => events.push(`resume ${name}`) });

  it('does nothing while the canary is there', async () => {
    const w = world();
    await w.hot.markInitialized('x');
    const events: string[] = [];
    expect(await sentinelCheck({ config, hot: w.hot, reconciler: w.reconciler('a'), log: silentLogger, pausables: () => [pausable(events, 'c1')] })).toBe('ok');
    expect(events).toEqual([]);
  });

  it('canary gone: pauses every consumer, rebuilds, resumes them', async () => {
    const w = world();
    w.state(snapshot(hook('wh_b'), stamp(T0)));
    const events: string[] = [];
    const r = w.reconciler('a');
    const spy = { ensureInitialized: async (s?: AbortSignal) => (events.push('rebuild'), r.ensureInitialized(s)) };
    expect(await sentinelCheck({ config, hot: w.hot, reconciler: spy, log: silentLogger, pausables: () => [pausable(events, 'c1'), pausable(events, 'c2')] })).toBe('rebuilt');
    expect(events).toEqual(['pause c1', 'pause c2', 'rebuild', 'resume c1', 'resume c2']);
    expect(await w.hot.retryCount()).toBe(1);
  });

  it('an unreachable hot state is not a missing canary: nothing pauses', async () => {
    const w = world();
    const down = { ...w.hot, isInitialized: async () => Promise.reject(new Error('ECONNREFUSED')) } as unknown as HotState;
    const events: string[] = [];
    expect(await sentinelCheck({ config, hot: down, reconciler: w.reconciler('a'), log: silentLogger, pausables: () => [pausable(events, 'c1')] })).toBe('unreachable');
    expect(events).toEqual([]);
  });

  it("the scheduler's gate claims nothing while paused", async () => {
    const w = world();
    await w.hot.apply({ retries: [{ id: 'wh_1', dueAt: 0, data: 'd' }] });
    const { hot, gate } = pausableClaims(w.hot);
    gate.pause();
    expect(await hot.claimDueRetries(w.clock.now(), 10, 1000)).toEqual([]);
    gate.resume();
    expect((await hot.claimDueRetries(w.clock.now(), 10, 1000)).map((r) => r.id)).toEqual(['wh_1']);
    expect(await hot.retryCount()).toBe(1);
  });
});
