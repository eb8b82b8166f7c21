import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLeaseKeeper } from '../../core/pipeline/lease-keeper';
import type { Leased } from '../../core/pipeline/handoff';
import type { Logger } from '../../core/ports/logger';

// The lease keeper of deliveries running in the background (core/pipeline/lease-keeper.ts) on a fake clock.

const quiet: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

describe('lease keeper', () => {
  afterEach(() => vi.useRealTimers());

  it('moves every open lease to now + lease every third of a lease, and forgets a removed one', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const renewed: { id: string; from: number; to: number }[][] = [];
    const keeper = createLeaseKeeper({ hot: { renewLeases: async (items) => (renewed.push(items), items.length) }, clock: { now: () => Date.now() }, log: quiet, leaseMs: 30_000 });
    const a: Leased = { id: 'a', leaseDueAt: 1_030_000, leaseWritten: Promise.resolve() };
    const b: Leased = { id: 'b', leaseDueAt: 1_030_000, leaseWritten: Promise.resolve() };
    keeper.add(a);
    keeper.add(b);
    await vi.advanceTimersByTimeAsync(9_999);
    expect(renewed).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(renewed).toEqual([
      [
        { id: 'a', from: 1_030_000, to: 1_040_000 },
        { id: 'b', from: 1_030_000, to: 1_040_000 },
      ],
    ]);
    expect(a.leaseDueAt).toBe(1_040_000);
    keeper.remove(b);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(renewed[1]).toEqual([{ id: 'a', from: 1_040_000, to: 1_050_000 }]);
    keeper.stop();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(renewed).toHaveLength(2);
  });

  it('keeps the lease it had when a renewal fails, and tries again next time', async () => {
    vi.useFakeTimers({ now: 0 });
    let fail = true;
    const keeper = createLeaseKeeper({
      hot: {
        renewLeases: async () => {
          if (fail) throw new Error('redis down');
          return 1;
        },
      },
      clock: { now: () => Date.now() },
      log: quiet,
      leaseMs: 3_000,
    });
    const a: Leased = { id: 'a', leaseDueAt: 3_000, leaseWritten: Promise.resolve() };
    keeper.add(a);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(a.leaseDueAt).toBe(3_000);
    fail = false;
    await vi.advanceTimersByTimeAsync(1_000);
    expect(a.leaseDueAt).toBe(5_000);
    keeper.stop();
  });

  it('renews the written leases without waiting for one whose write is still out', async () => {
    vi.useFakeTimers({ now: 0 });
    const renewed: string[][] = [];
    const keeper = createLeaseKeeper({
      hot: { renewLeases: async (items) => (renewed.push(items.map((i) => i.id)), items.length) },
      clock: { now: () => Date.now() },
      log: quiet,
      leaseMs: 3_000,
    });
    let write!: () => void;
    keeper.add({ id: 'a', leaseDueAt: 3_000, leaseWritten: Promise.resolve() });
    keeper.add({ id: 'b', leaseDueAt: 3_000, leaseWritten: new Promise<void>((r) => (write = r)) });
    await vi.advanceTimersByTimeAsync(1_000);
    expect(renewed).toEqual([['a']]);
    write();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(renewed[1]).toEqual(['a', 'b']);
    keeper.stop();
  });

  it('releases given-up leases: due now, and no longer renewed', async () => {
    vi.useFakeTimers({ now: 10_000 });
    const calls: { id: string; from: number; to: number }[][] = [];
    const keeper = createLeaseKeeper({ hot: { renewLeases: async (items) => (calls.push(items), items.length) }, clock: { now: () => Date.now() }, log: quiet, leaseMs: 3_000 });
    const a: Leased = { id: 'a', leaseDueAt: 13_000, leaseWritten: Promise.resolve() };
    keeper.add(a);
    await keeper.release([a]);
    expect(calls).toEqual([[{ id: 'a', from: 13_000, to: 10_000 }]]);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(calls).toHaveLength(1);
    keeper.stop();
  });
});
