import { afterEach, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../core/config/load';
import type { Webhook } from '../../core/domain/webhook';
import { MemoryGuards } from '../../core/memory/guards';
import { createAttempter } from '../../core/pipeline/attempt';
import { guardParams } from '../../core/pipeline/guard-params';
import { createInflightKeeper } from '../../core/pipeline/inflight-keeper';
import type { Logger } from '../../core/ports/logger';
import type { InflightLease } from '../../core/ports/guards';
import type { Sender } from '../../core/ports/sender';
import { testWebhook } from '../helpers/webhook';

// In-flight leases from the worker's side: a delivery that runs longer than its lease keeps
// counting (core/pipeline/inflight-keeper.ts renews it), and one that ends, however it ends,
// stops counting.

const quiet: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const T0 = 1_750_000_000_000;
const lease = (id: string): InflightLease => ({ id, endpointHash: 'ep', host: 'h', counted: { endpoint: true, domain: false } });

describe('in-flight keeper', () => {
  afterEach(() => vi.useRealTimers());

  it('renews, every third of a lease, the leases held for at least that long; stops its timer when none is held', async () => {
    vi.useFakeTimers({ now: T0 });
    const calls: { ids: string[]; now: number }[] = [];
    const keeper = createInflightKeeper({
      renew: async (ls, now) => void calls.push({ ids: ls.map((l) => l.id), now }),
      clock: { now: () => Date.now() },
      log: quiet,
      leaseMs: 30_000,
    });
    keeper.add(lease('a'), T0);
    await vi.advanceTimersByTimeAsync(5_000);
    keeper.add(lease('b'), T0 + 5_000);
    await vi.advanceTimersByTimeAsync(5_000);
    // b was admitted 5 s ago: its lease has 25 s left, it waits for the next round.
    expect(calls).toEqual([{ ids: ['a'], now: T0 + 10_000 }]);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(calls[1]).toEqual({ ids: ['a', 'b'], now: T0 + 20_000 });
    keeper.remove('a');
    keeper.remove('b');
    await vi.advanceTimersByTimeAsync(10_000);
    expect(calls).toHaveLength(2);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('takes no lease for an admission that counted nothing, and tries a failed renewal again next round', async () => {
    vi.useFakeTimers({ now: T0 });
    let fail = true;
    const calls: string[][] = [];
    const keeper = createInflightKeeper({
      renew: async (ls) => {
        if (fail) throw new Error('redis down');
        calls.push(ls.map((l) => l.id));
      },
      clock: { now: () => Date.now() },
      log: quiet,
      leaseMs: 6_000,
    });
    keeper.add({ ...lease('none'), counted: { endpoint: false, domain: false } }, T0);
    expect(keeper.size()).toBe(0);
    keeper.add(lease('a'), T0);
    await vi.advanceTimersByTimeAsync(2_000);
    fail = false;
    await vi.advanceTimersByTimeAsync(2_000);
    expect(calls).toEqual([['a']]);
  });
});

const hook = (n: number): Webhook => testWebhook({ id: `wh_${n}` });

const setup = (extra: Record<string, unknown> = {}) => {
  // concurrency.inflight_ttl: leases of 10 s (the default); delivery.timeout 30 s.
  const config = loadConfig({
    overrides: { 'signing.default_secret': 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'concurrency.max_inflight_per_endpoint': 10, 'concurrency.inflight_ttl': '10s' },
  });
  const guards = new MemoryGuards();
  let release: (() => void) | undefined;
  let sent = 0;
  const sender: Sender = {
    send: async () => {
      sent++;
      await new Promise<void>((r) => (release = r));
      return { kind: 'response', status: 200, retryAfter: null, bodySnippet: '', durationMs: 1 };
    },
    close: async () => {},
  };
  const attempter = createAttempter({ config, sender, clock: { now: () => Date.now() }, log: quiet, guards, ...extra });
  return { attempter, guards, params: guardParams(config), sent: () => sent, release: () => release?.() };
};

const until = async (cond: () => boolean) => {
  for (let i = 0; i < 400 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(cond()).toBe(true);
};

describe('in-flight leases of a worker', () => {
  afterEach(() => vi.useRealTimers());

  it('keep a delivery that outlasts its lease counted until it completes, then it counts no more', async () => {
    // The clock and the keeper's interval are fake; everything else runs for real.
    vi.useFakeTimers({ now: T0, toFake: ['Date', 'setInterval', 'clearInterval'] });
    const { attempter, guards, params, sent, release } = setup();
    expect(params.inflightLeaseMs).toBe(10_000);
    const done = attempter.attempt({ webhook: hook(1), lane: 'fast' });
    await until(() => sent() === 1);
    // A slow endpoint: still no answer 25 s later (within delivery.timeout), long past the first lease.
    await vi.advanceTimersByTimeAsync(25_000);
    expect((await guards.endpoint('ep', Date.now(), params)).inflight).toBe(1);
    release();
    expect((await done).kind).toBe('attempted');
    await attempter.settle();
    expect((await guards.endpoint('ep', Date.now(), params)).inflight).toBe(0);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('end the leases of an attempt that failed before it could complete', async () => {
    const { attempter, guards, params } = setup({
      deliveryScript: () => {
        throw new Error('script store broken');
      },
    });
    await expect(attempter.attempt({ webhook: hook(2), lane: 'fast' })).rejects.toThrow('script store broken');
    await attempter.settle();
    expect((await guards.endpoint('ep', Date.now(), params)).inflight).toBe(0);
  });
});
