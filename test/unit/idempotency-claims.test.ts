import { describe, expect, it } from 'vitest';
import { UnavailableError } from '../../core/errors/errors';
import { MemoryHotState } from '../../core/memory/hot-state';
import { claimKeyed, commitKeyed, IdempotencyConflictError, releaseKeyed, type ClaimDeps, type KeyedHook } from '../../core/pipeline/idempotency';
import { systemClock } from '../../core/ports/clock';
import type { IdempotencyStore } from '../../core/ports/hot-state';
import { silentLogger } from '../../core/ports/logger';

// The claims every door makes (core/pipeline/idempotency.ts): a copy of a request in flight
// waits for its outcome, another request under the key is a conflict, and a store that cannot
// be reached lets the webhook through (fail open) instead of refusing it.
describe('idempotency claims', () => {
  const depsOf = (store: IdempotencyStore): ClaimDeps => ({ store, configId: 'cfg', ttlMs: 60_000, log: silentLogger, clock: systemClock });
  const memory = () => new MemoryHotState({ status_ttl: 60_000, stats_ttl: 60_000, retry_data_ttl: 60_000 }, systemClock);
  const hook = (id: string, fingerprint = 'f1', key = 'k'): KeyedHook => ({ id, key, fingerprint });

  it('answers a copy sent while the first is in flight with the first webhook once it is committed, not before', async () => {
    const d = depsOf(memory());
    expect(await claimKeyed(d, [hook('wh_1')])).toEqual(new Map([['wh_1', 'wh_1']]));
    let settled = false;
    const copy = claimKeyed(d, [hook('wh_2')]).finally(() => (settled = true));
    await new Promise((r) => setTimeout(r, 100));
    expect(settled).toBe(false);
    await commitKeyed(d, [hook('wh_1')]);
    expect(await copy).toEqual(new Map([['wh_2', 'wh_1']]));
  });

  it('fails a copy the way its first request failed (503, retry), and its retry makes the webhook', async () => {
    const d = depsOf(memory());
    await claimKeyed(d, [hook('wh_1')]);
    const copy = claimKeyed(d, [hook('wh_2')]).catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 60));
    await releaseKeyed(d, [hook('wh_1')]);
    const err = await copy;
    expect(err).toBeInstanceOf(UnavailableError);
    expect((err as UnavailableError).message).toMatch(/failed while this one waited/);
    expect(await claimKeyed(d, [hook('wh_3')])).toEqual(new Map([['wh_3', 'wh_3']]));
  });

  it('answers 503 (retry shortly) when the first is still in flight after the wait, and gives back what it claimed', async () => {
    const d = depsOf(memory());
    await claimKeyed(d, [hook('wh_1')]);
    const err = await claimKeyed(d, [hook('wh_2', 'f2', 'other'), hook('wh_3')]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnavailableError);
    expect((err as UnavailableError).message).toMatch(/in flight; retry shortly/);
    expect(await claimKeyed(d, [hook('wh_4', 'f2', 'other')])).toEqual(new Map([['wh_4', 'wh_4']]));
  }, 10_000);

  it('refuses another request under a key, in flight or committed, and gives back the claims it made', async () => {
    const d = depsOf(memory());
    await claimKeyed(d, [hook('wh_1')]);
    await expect(claimKeyed(d, [hook('wh_2', 'f1', 'fresh'), hook('wh_3', 'f9')])).rejects.toBeInstanceOf(IdempotencyConflictError);
    await commitKeyed(d, [hook('wh_1')]);
    await expect(claimKeyed(d, [hook('wh_5', 'f9')])).rejects.toThrow(/wh_1/);
    expect(await claimKeyed(d, [hook('wh_6', 'f1', 'fresh')])).toEqual(new Map([['wh_6', 'wh_6']]));
  });

  it('fails open when the store is unreachable: no owner, the caller enqueues', async () => {
    const down: IdempotencyStore = {
      claimIdempotency: () => Promise.reject(new UnavailableError('redis: connection refused')),
      releaseIdempotency: () => Promise.reject(new UnavailableError('redis: connection refused')),
      commitIdempotency: () => Promise.reject(new UnavailableError('redis: connection refused')),
    };
    expect(await claimKeyed(depsOf(down), [hook('wh_1')])).toBeUndefined();
    await expect(commitKeyed(depsOf(down), [hook('wh_1')])).resolves.toBeUndefined();
  });
});
