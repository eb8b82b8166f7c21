import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config/load';
import { MemoryHotState } from '../../core/memory/hot-state';
import { MemoryLog } from '../../core/memory/log';
import { MemoryTopicReader } from '../../core/memory/topic-reader';
import { silentLogger } from '../../core/ports/logger';
import { createOrphanSweep, orphanGrace } from '../../core/reconcile/orphans';
import { snapshotValue } from '../../core/records/state';
import { T0, hook, snapshot, stamp, statusFor, tombstone } from '../helpers/reconcile-fixtures';

// Which webhooks the orphan sweep schedules again, on the in-memory adapters with a fake
// clock: only those howk.state says are due, past the grace, that the hot state carries nowhere.

const TTLS = { status_ttl: 7 * 86_400_000, stats_ttl: 86_400_000, retry_data_ttl: 7 * 86_400_000 };

describe('orphan sweep', () => {
  it('takes the configured grace, raised to the longest a live delivery can go unmarked', () => {
    const cfg = (o: Record<string, unknown>) => loadConfig({ env: {}, overrides: o });
    // 30 s timeout + max(5 s claim lease, 5 s handoff lease, 4 s in-flight lease) + 1 s poll.
    expect(orphanGrace(cfg({ 'reconciler.orphan_grace': 0 }))).toBe(36_000);
    expect(orphanGrace(cfg({ 'reconciler.orphan_grace': 0, 'delivery.handoff_lease': 90_000 }))).toBe(121_000);
    expect(orphanGrace(cfg({}))).toBe(300_000);
  });

  it('schedules again only the overdue webhooks that nothing carries (parked ones too, not paused ones), once', async () => {
    const config = loadConfig({ env: {}, overrides: { 'kafka.topics': { state: 's.state' } } });
    const grace = orphanGrace(config);
    let now = T0 + 1000 + grace + 1;
    const clock = { now: () => now };
    const log = new MemoryLog(2);
    const hot = new MemoryHotState(TTLS, clock);
    const ns = stamp(T0);
    const w = Object.fromEntries(['lost', 'scheduled', 'newer', 'ended', 'gone', 'early'].map((id) => [id, hook(id)]));
    await log.append(Object.values(w).map((x) => ({ topic: 's.state', ...snapshot(x, ns, x.id === 'early' ? now - grace + 1000 : T0 + 1000) })));
    await log.append([{ topic: 's.state', ...tombstone('gone') }]);
    // Parked by a circuit (its schedule lost too), and held by a pause (its queue holds it, not the schedule).
    const parked = hook('parked');
    const paused = hook('paused');
    await log.append([
      { topic: 's.state', key: 'parked', value: snapshotValue(parked, statusFor(parked, ns, { held: 'circuit_open' }), T0 + 1000) },
      { topic: 's.state', key: 'paused', value: snapshotValue(paused, statusFor(paused, ns, { held: 'paused' }), T0 + 1000) },
    ]);
    await hot.apply({
      statuses: [
        ...['lost', 'scheduled', 'gone', 'early'].map((id) => ({ status: statusFor(w[id]!, ns) })),
        { status: statusFor(parked, ns, { held: 'circuit_open' }) },
        { status: statusFor(paused, ns, { held: 'paused' }) },
        { status: statusFor(w.newer!, stamp(T0 + 5000)) },
        { status: statusFor(w.ended!, stamp(T0 + 5000), { state: 'delivered' }) },
      ],
      retries: [{ id: 'scheduled', dueAt: now + 60_000, data: 'x' }],
    });
    let repaired = 0;
    await hot.markInitialized('test');
    const sweep = createOrphanSweep({ config, reader: new MemoryTopicReader(log), hot, log: silentLogger, clock, onRepaired: (n) => (repaired += n) });
    const first = await sweep.sweepOnce();
    expect(first).toMatchObject({ live: 7, candidates: 5, orphans: 2 });
    expect(first.repaired.sort()).toEqual(['lost', 'parked']);
    expect(repaired).toBe(2);
    // Due at once: the next claim takes it.
    const due = await hot.claimDueRetries(now, 10, 1000);
    expect(due.map((r) => r.id).sort()).toEqual(['lost', 'parked']);
    // Its schedule now carries it (leased by that claim): the next sweep leaves it alone.
    now += 10;
    expect((await sweep.sweepOnce()).repaired).toEqual([]);
    expect(repaired).toBe(2);
  });

  it('leaves a Redis without its canary to the rebuild', async () => {
    const config = loadConfig({ env: {}, overrides: { 'kafka.topics': { state: 's.state' } } });
    const clock = { now: () => T0 + 1000 + orphanGrace(config) + 1 };
    const log = new MemoryLog(2);
    const hot = new MemoryHotState(TTLS, clock);
    await log.append([{ topic: 's.state', ...snapshot(hook('lost'), stamp(T0)) }]);
    const sweep = createOrphanSweep({ config, reader: new MemoryTopicReader(log), hot, log: silentLogger, clock });
    expect(await sweep.sweepOnce()).toMatchObject({ skipped: true, repaired: [] });
    expect(await hot.retryCount()).toBe(0);
    await hot.markInitialized('test');
    expect((await sweep.sweepOnce()).repaired).toEqual(['lost']);
  });
});
