import type { Redis } from '@upstash/redis/cloudflare';
import { describe, expect, it } from 'vitest';
import { KeyCheckUnavailableError, RateLimitedError } from '../../core/errors/errors';
import { generateKey, type ApiKeyRecord } from '../../core/security/api-keys';
import { edgeKeyService, type EdgeKeyOptions } from '../../edge/keys';

// The edge's key check against its mirror, with the mirror's reads counted and failed at
// will (the HGET the edge sends through howk-bridge). The workerd runs of the same rules, on
// a real bridge and Redis, are in test/edge/key-check.test.ts.
const mirror = () => {
  const table = new Map<string, string>();
  const m = {
    table,
    reads: 0,
    fail: false,
    put: (r: ApiKeyRecord) => table.set(r.id, JSON.stringify(r)),
    redis: {
      hget: async (_key: string, id: string) => {
        m.reads++;
        if (m.fail) throw new Error('fetch failed: bridge unreachable');
        return table.get(id) ?? null;
      },
    } as unknown as Redis,
  };
  return m;
};

const key = (name = 'k') => generateKey({ name, scopes: ['read'] }, new Date(0));
/** A well-formed token of a key id nobody made. */
const stranger = (n: number) => `howk_${n.toString(16).padStart(16, '0')}_${'A'.repeat(43)}`;
const revoked = (r: ApiKeyRecord): ApiKeyRecord => ({ ...r, revoked_at: new Date(1000).toISOString() });

const setup = (o: Partial<EdgeKeyOptions> = {}) => {
  const m = mirror();
  const clock = { t: 1_000_000, now: () => clock.t };
  const svc = edgeKeyService({ redis: m.redis, bootstrap: undefined, cacheMs: 10_000, missCacheMs: 2_000, lookups: { rate: 0, burst: 1 }, retryAfterSec: 2, clock, ...o });
  return { m, clock, svc };
};

describe('API keys at the edge: the mirror decides, and the check fails closed', () => {
  it('refuses a key revoked on the fleet while the mirror cannot be read, whatever HOWK_EDGE_API_KEYS says', async () => {
    const b = await key('boot');
    const { m, svc } = setup({ bootstrap: JSON.stringify([b.record]) });
    m.put(revoked(b.record));
    m.fail = true;
    await expect(svc.verify(b.token, 'c1')).rejects.toBeInstanceOf(KeyCheckUnavailableError);
    await expect(svc.verify(b.token, 'c1')).rejects.toMatchObject({ code: 'key_check_unavailable' });
    // Healthy again: the mirror's revoked record refuses it.
    m.fail = false;
    expect(await svc.verify(b.token, 'c1')).toBeNull();
  });

  it('counts only a record read within its cache time: an expired one may have been revoked since', async () => {
    const a = await key('a');
    const { m, clock, svc } = setup();
    m.put(a.record);
    expect((await svc.verify(a.token, 'c1'))?.id).toBe(a.record.id);
    m.put(revoked(a.record));
    m.fail = true;
    clock.t += 9_000;
    expect((await svc.verify(a.token, 'c1'))?.id, 'within the cache time').toBe(a.record.id);
    clock.t += 1_000;
    await expect(svc.verify(a.token, 'c1')).rejects.toBeInstanceOf(KeyCheckUnavailableError);
    m.fail = false;
    expect(await svc.verify(a.token, 'c1')).toBeNull();
  });

  it('ignores the bootstrap list once a mirror is configured, and uses it without one', async () => {
    const b = await key('boot');
    const { svc } = setup({ bootstrap: JSON.stringify([b.record]) });
    expect(await svc.verify(b.token, 'c1')).toBeNull();
    const alone = edgeKeyService({
      redis: undefined,
      bootstrap: JSON.stringify([b.record]),
      cacheMs: 10_000,
      missCacheMs: 2_000,
      lookups: { rate: 1, burst: 1 },
      retryAfterSec: 2,
      clock: { now: () => 0 },
    });
    expect((await alone.verify(b.token, 'c1'))?.id).toBe(b.record.id);
  });

  it('remembers an unknown id for key_miss_cache, apart from real keys: a flood of ids evicts none of them', async () => {
    const [a, u] = await Promise.all([key('a'), key('unknown')]);
    const { m, clock, svc } = setup();
    m.put(a.record);
    expect((await svc.verify(a.token, 'c1'))?.id).toBe(a.record.id);
    expect(await svc.verify(u.token, 'c1')).toBeNull();
    const reads = m.reads;
    expect(await svc.verify(u.token, 'c1')).toBeNull();
    expect(m.reads, 'the second lookup of an unknown id').toBe(reads);
    clock.t += 2_000;
    expect(await svc.verify(u.token, 'c1')).toBeNull();
    expect(m.reads, 'after key_miss_cache').toBe(reads + 1);
    // More unknown ids than either cache holds, then the mirror fails: the real key, read
    // within its cache time, still passes.
    const before = m.reads;
    for (let i = 0; i < 10_050; i++) expect(await svc.verify(stranger(i), `c${i}`)).toBeNull();
    expect(m.reads - before).toBe(10_050);
    m.fail = true;
    expect((await svc.verify(a.token, 'c1'))?.id).toBe(a.record.id);
  });

  it('limits the lookups each client sends to the mirror; another client still gets its key checked', async () => {
    const a = await key('a');
    const { m, svc } = setup({ lookups: { rate: 0.01, burst: 3 } });
    m.put(a.record);
    for (let i = 0; i < 3; i++) expect(await svc.verify(stranger(i), '203.0.113.7')).toBeNull();
    const err = await svc.verify(stranger(3), '203.0.113.7').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitedError);
    expect((err as RateLimitedError).retryAfterSec).toBeGreaterThan(0);
    expect(m.reads).toBe(3);
    // Ids it already looked up cost nothing; another client is not limited by it.
    expect(await svc.verify(stranger(0), '203.0.113.7')).toBeNull();
    expect((await svc.verify(a.token, '198.51.100.2'))?.id).toBe(a.record.id);
  });
});
