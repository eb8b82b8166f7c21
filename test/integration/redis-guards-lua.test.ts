import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { freshLimit, recordSample, type LimitSample, type LimitState } from '../../core/policy/adaptive-limit';
import { BATCH_SCRIPTS } from '../../workers/redis/scripts';
import { VECTORS } from '../fixtures/limit-vectors';
import { useFlushedRedis } from '../helpers/flushed-redis';
import { COMPLETE_PREFIXES, NOW, completion, guardScriptCalls, layout, type Req } from '../helpers/guard-script-calls';

// completeDelivery.lua and the adaptiveLimit.lua it includes against real Redis, called directly
// by their header contracts (KEYS, ARGV, returns), independent of RedisGuards around them. A db
// of its own (useFlushedRedis), flushed before each test. admitDelivery.lua: redis-admit-lua.test.ts.
let redis: Redis;
useFlushedRedis((r) => (redis = r));
const { runBatch, one, fill } = guardScriptCalls(() => redis);

describe('completeDelivery.lua', () => {
  const K = {
    circuit: 'circuit:ep',
    conc: 'inflight:ep',
    domain: 'domain_inflight:h',
    errors: 'endpoint_errors:ep',
    limit: 'limit:ep',
    domainLimit: 'domain_limit:h',
    latency: 'endpoint_latency:ep',
  };
  const CB = { threshold: 3, window: 10_000, recovery: 30_000, probeInterval: 5_000, successes: 2 };
  type C = {
    now?: number;
    outcome?: 'success' | 'failure' | 'neutral';
    probe?: 0 | 1;
    ep?: 0 | 1;
    dom?: 0 | 1;
    circuit?: 0 | 1;
    ttl?: number;
    error?: string;
    sample?: LimitSample;
    domainMax?: number;
    id?: string;
  };
  // Limits as in core/policy: LIMITS (initial 20, floor 1, tolerance 2, 1 s, 30 s, ceiling 1000); 200 samples kept.
  const LIMITS = { initial: 20, floor: 1, ceiling: 1000, tolerance: 2, slowThresholdMs: 1000, windowMs: 30_000 };
  const shared = (c: C) => [c.circuit ?? 1, CB.threshold, CB.window, CB.recovery, CB.probeInterval, CB.successes, c.ttl ?? 600_000, 20, 1, 2, 1000, 30_000, 1000, 200];
  const request = (c: C): Req => completion({ ...c, now: c.now ?? NOW });
  const complete = (c: C = {}) => one('completeDelivery', shared(c), request(c));

  it('applies several completions in one call in order and returns the state after each', async () => {
    await fill(K.conc, 3);
    const replies = await runBatch('completeDelivery', shared({}), [
      request({ outcome: 'failure', ep: 1, now: NOW, id: 'busy0' }),
      request({ outcome: 'failure', ep: 1, now: NOW + 1, id: 'busy1' }),
      request({ outcome: 'failure', ep: 1, now: NOW + 2, error: 'HTTP 503', id: 'busy2' }),
      request({ outcome: 'success', now: NOW + 3 }),
    ]);
    // The third opened the circuit (a transition: {state, open_until, opened_count}); the fourth, late, changed nothing.
    expect(replies).toEqual(['CLOSED', 'CLOSED', ['OPEN', String(NOW + 2 + CB.recovery), 1], 'OPEN']);
    expect(await redis.zcard(K.conc)).toBe(0);
    expect(await redis.hget(K.circuit, 'open_until')).toBe(String(NOW + 2 + CB.recovery));
    expect(await redis.llen(K.errors)).toBe(1);
  });

  it('replies with one code per completion, then a triple per completion that moved the circuit', async () => {
    const raw = await redis.eval(
      BATCH_SCRIPTS.completeDelivery,
      0,
      ...shared({}),
      ...COMPLETE_PREFIXES,
      ...layout(
        [
          request({ outcome: 'failure', now: NOW, id: 'a' }),
          request({ outcome: 'failure', now: NOW + 1, id: 'b' }),
          request({ outcome: 'failure', now: NOW + 2, id: 'c' }),
          request({ outcome: 'success', now: NOW + 3, id: 'd' }),
        ],
        false,
      ),
    );
    expect(raw).toEqual(['CCTO', 'OPEN', String(NOW + 2 + CB.recovery), 1]);
  });

  it('ends only the leases flagged counted (endpoint 2, domain 4), by the webhook id; ending one twice or one never taken changes nothing', async () => {
    await fill(K.conc, 3);
    await fill(K.domain, 2);
    await redis.pexpire(K.conc, 60_000);
    await complete({ ep: 1, id: 'busy2' });
    expect([await redis.zrange(K.conc, 0, -1), await redis.zcard(K.domain)]).toEqual([['busy0', 'busy1'], 2]);
    await complete({ ep: 1, dom: 1, id: 'busy1' });
    await complete({ ep: 1, dom: 1, id: 'busy1' });
    await complete({ ep: 1, dom: 1, id: 'wh_never' });
    expect(await redis.zrange(K.conc, 0, -1)).toEqual(['busy0']);
    expect(await redis.zrange(K.domain, 0, -1)).toEqual(['busy0']);
    expect(await redis.pttl(K.conc)).toBeGreaterThan(0);
    // A zset that is gone (expired) stays gone.
    await redis.del(K.conc);
    await complete({ ep: 1, id: 'busy0' });
    expect(await redis.exists(K.conc)).toBe(0);
  });

  it('feeds the limit the leases in force: an expired one is not counted', async () => {
    // Ten leases, eight of them expired at NOW: the sample at 2 in flight of a limit of 20 does not grow it (less than half in use).
    await fill(K.conc, 2);
    await redis.zadd(K.conc, ...Array.from({ length: 8 }, (_, i) => [NOW, `dead${i}`]).flat());
    await complete({ ep: 1, id: 'busy0', sample: { ms: 10, drop: false, timeout: false } });
    const at2 = recordSample(freshLimit(LIMITS), { ms: 10, drop: false, timeout: false }, 2, NOW, LIMITS);
    expect(Number(await redis.hget(K.limit, 'limit'))).toBe(at2.limit);
    expect(at2.limit).not.toBe(recordSample(freshLimit(LIMITS), { ms: 10, drop: false, timeout: false }, 10, NOW, LIMITS).limit);
  });

  it('pushes {at, error} to the front of the error list, keeping 10, with the TTL ARGV[12]', async () => {
    for (let i = 0; i < 12; i++) await complete({ now: NOW + i, outcome: 'neutral', error: `boom ${i}`, ttl: 50_000 });
    await complete({ now: NOW + 99, error: '' });
    const list = (await redis.lrange(K.errors, 0, -1)).map((e) => JSON.parse(e) as unknown);
    expect(list).toEqual(Array.from({ length: 10 }, (_, k) => ({ at: new Date(NOW + 11 - k).toISOString(), error: `boom ${11 - k}` })));
    const ttl = await redis.pttl(K.errors);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(50_000);
  });

  it("returns 'CLOSED' and creates no circuit when ARGV[6] is 0", async () => {
    expect(await complete({ outcome: 'failure', circuit: 0 })).toBe('CLOSED');
    await redis.hset(K.circuit, { state: 'HALF_OPEN', probe_at: NOW });
    expect(await complete({ outcome: 'failure', probe: 1, circuit: 0 })).toBe('CLOSED');
    expect(await redis.hget(K.circuit, 'state')).toBe('HALF_OPEN');
  });

  it('counts failures in a window and opens at the threshold (open_until, opened_count, TTL)', async () => {
    expect(await complete({ outcome: 'failure', now: NOW })).toBe('CLOSED');
    expect(await redis.hgetall(K.circuit)).toEqual({ state: 'CLOSED', failures: '1', window_start: String(NOW) });
    expect(await complete({ outcome: 'failure', now: NOW + 5_000 })).toBe('CLOSED');
    expect(await complete({ outcome: 'failure', now: NOW + 10_000, ttl: 70_000 })).toEqual(['OPEN', String(NOW + 10_000 + CB.recovery), 1]);
    expect(await redis.hgetall(K.circuit)).toEqual({ state: 'OPEN', failures: '3', window_start: String(NOW), open_until: String(NOW + 10_000 + CB.recovery), opened_count: '1' });
    const ttl = await redis.pttl(K.circuit);
    expect(ttl).toBeGreaterThan(60_000);
    expect(ttl).toBeLessThanOrEqual(70_000);
  });

  it('starts a new window when a failure comes more than failure_window after the window start', async () => {
    await complete({ outcome: 'failure', now: NOW });
    await complete({ outcome: 'failure', now: NOW + 1 });
    expect(await complete({ outcome: 'failure', now: NOW + 10_001 })).toBe('CLOSED');
    expect(await redis.hgetall(K.circuit)).toMatchObject({ failures: '1', window_start: String(NOW + 10_001) });
  });

  it('resets the failures on a success while CLOSED, and writes nothing for a success on a fresh circuit', async () => {
    expect(await complete({ outcome: 'success' })).toBe('CLOSED');
    expect(await redis.exists(K.circuit)).toBe(0);
    await complete({ outcome: 'failure' });
    await complete({ outcome: 'failure' });
    expect(await complete({ outcome: 'success' })).toBe('CLOSED');
    expect(await redis.hget(K.circuit, 'failures')).toBe('0');
  });

  it('changes nothing on a neutral outcome and returns the current state', async () => {
    await redis.hset(K.circuit, { state: 'HALF_OPEN', probe_at: NOW, successes: 1 });
    expect(await complete({ outcome: 'neutral', probe: 1 })).toBe('HALF_OPEN');
    expect(await redis.hgetall(K.circuit)).toEqual({ state: 'HALF_OPEN', probe_at: String(NOW), successes: '1' });
    await redis.del(K.circuit);
    expect(await complete({ outcome: 'neutral' })).toBe('CLOSED');
    expect(await redis.exists(K.circuit)).toBe(0);
  });

  it('ignores every outcome while OPEN, probe or not', async () => {
    const open = { state: 'OPEN', open_until: String(NOW + 30_000), failures: '3', opened_count: '1' };
    await redis.hset(K.circuit, open);
    for (const outcome of ['success', 'failure'] as const) {
      for (const probe of [0, 1] as const) expect(await complete({ outcome, probe })).toBe('OPEN');
    }
    expect(await redis.hgetall(K.circuit)).toEqual(open);
  });

  it('ignores non-probe answers while HALF_OPEN', async () => {
    const half = { state: 'HALF_OPEN', probe_at: String(NOW), successes: '0' };
    await redis.hset(K.circuit, half);
    expect(await complete({ outcome: 'success' })).toBe('HALF_OPEN');
    expect(await complete({ outcome: 'failure' })).toBe('HALF_OPEN');
    expect(await redis.hgetall(K.circuit)).toEqual(half);
  });

  it('re-opens on a failed probe until now + probe_interval, clearing successes', async () => {
    await redis.hset(K.circuit, { state: 'HALF_OPEN', probe_at: NOW, successes: 1, opened_count: 2 });
    expect(await complete({ outcome: 'failure', probe: 1, now: NOW + 300 })).toEqual(['OPEN', String(NOW + 300 + CB.probeInterval), 2]);
    expect(await redis.hgetall(K.circuit)).toMatchObject({ state: 'OPEN', open_until: String(NOW + 300 + CB.probeInterval), successes: '0', opened_count: '2' });
  });

  it('counts a probe success (probe_at 0: the next probe at once) and closes at success_threshold keeping opened_count', async () => {
    await redis.hset(K.circuit, { state: 'HALF_OPEN', probe_at: NOW, successes: 0, failures: 3, window_start: NOW - 5_000, open_until: NOW, opened_count: 2 });
    expect(await complete({ outcome: 'success', probe: 1 })).toBe('HALF_OPEN');
    expect(await redis.hgetall(K.circuit)).toMatchObject({ state: 'HALF_OPEN', successes: '1', probe_at: '0' });
    expect(await complete({ outcome: 'success', probe: 1, ttl: 80_000 })).toEqual(['CLOSED', '0', 2]);
    expect(await redis.hgetall(K.circuit)).toEqual({ state: 'CLOSED', opened_count: '2' });
    expect(await redis.pttl(K.circuit)).toBeGreaterThan(70_000);
  });
});

// The pause scripts (holdPaused, pauseScope, resumeScope, takeHeld, dropHeld): redis-pause-lua.test.ts.

describe('adaptiveLimit.lua (through completeDelivery.lua): the same doubles as core/policy/adaptive-limit.ts', () => {
  const K = ['circuit:ep', 'inflight:ep', 'domain_inflight:h', 'endpoint_errors:ep', 'limit:ep', 'domain_limit:h', 'endpoint_latency:ep'];
  const shared = (p: (typeof VECTORS)[string]['params']) => [
    0,
    3,
    10_000,
    30_000,
    5_000,
    2,
    600_000,
    p.initial,
    p.floor,
    p.tolerance,
    p.slowThresholdMs,
    p.windowMs,
    p.ceiling,
    200,
  ];
  const state = async (key: string): Promise<LimitState> => {
    const h = await redis.hgetall(key);
    return { limit: Number(h.limit), minMs: Number(h.min), latMs: Number(h.lat), timeoutAt: Number(h.timeout_at) };
  };

  it.each(Object.keys(VECTORS))('%s', async (name) => {
    const v = VECTORS[name]!;
    let model = freshLimit(v.params);
    let hostModel = freshLimit({ ...v.params, ceiling: 50 });
    for (const [i, x] of v.steps.entries()) {
      // The leases as they stand when the attempt ends (its own, 'wh', among them).
      const leases = Array.from({ length: x.inflight }, (_, k) => [x.at + 60_000, k ? `other${k}` : 'wh']).flat();
      for (const k of [K[1]!, K[2]!]) {
        await redis.del(k);
        if (leases.length) await redis.zadd(k, ...leases);
      }
      await runBatch('completeDelivery', shared(v.params), [completion({ now: x.at, outcome: x.drop ? 'failure' : 'success', ep: 1, dom: 1, sample: x, domainMax: 50, id: 'wh' })]);
      model = recordSample(model, x, x.inflight, x.at, v.params);
      hostModel = recordSample(hostModel, x, x.inflight, x.at, { ...v.params, ceiling: 50 });
      expect(await state(K[4]!), `${name}, step ${i}`).toEqual(model);
      expect(await state(K[5]!), `${name}, step ${i} (host)`).toEqual(hostModel);
    }
    expect(await redis.zcard(K[1]!)).toBe(Math.max(0, v.steps[v.steps.length - 1]!.inflight - 1));
  });
  // One call carrying every step (a worker's batch of completions of one endpoint): the state
  // is read once and written once, and must come out exactly as the steps one at a time.
  it.each(Object.keys(VECTORS))('%s, all steps in one call', async (name) => {
    const v = VECTORS[name]!;
    let model = freshLimit(v.params);
    // n deliveries in flight (one lease each); each completion ends its own, in turn.
    const n = v.steps.length;
    const until = Math.max(...v.steps.map((x) => x.at)) + 60_000;
    await redis.del(K[1]!);
    await redis.zadd(K[1]!, ...v.steps.flatMap((_, i) => [until, `w${i}`]));
    const reqs: Req[] = [];
    for (const [i, x] of v.steps.entries()) {
      reqs.push(completion({ now: x.at, outcome: x.drop ? 'failure' : 'success', ep: 1, sample: x, domainMax: 50, id: `w${i}` }));
      model = recordSample(model, x, n - i, x.at, v.params);
    }
    await runBatch('completeDelivery', shared(v.params), reqs);
    expect(await state(K[4]!)).toEqual(model);
    expect(await redis.zcard(K[1]!)).toBe(0);
    // The samples of the call, newest first, as one LPUSH per completion would leave them.
    const kept = v.steps
      .filter((x) => !x.drop || x.timeout)
      .map((x) => `${x.at}:${x.ms}`)
      .reverse()
      .slice(0, 200);
    expect(await redis.lrange(K[6]!, 0, -1)).toEqual(kept);
  });
});
