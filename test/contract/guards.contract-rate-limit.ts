import { expect, it } from 'vitest';
import { takeToken, type Bucket } from '../../core/policy/token-bucket';
import type { Admission, GuardParams } from '../../core/ports/guards';
import { CB, CFG, EP, EP2, NOT_COUNTED, T0, guardsSuite, params, type MakeGuards } from './guards.fixtures';

// The per-endpoint token bucket (core/policy/token-bucket.ts).
export const rateLimitCases = (make: MakeGuards): void => {
  guardsSuite('rate limit', make, (h) => {
    const { admit1, go, openAt } = h;
    // Four tokens per second (one per 250 ms), burst 3: binary-exact figures.
    const rl = (patch: Partial<GuardParams> = {}) => params({ circuit: { ...CB, enabled: false }, rate: 4, burst: 3, ...patch });

    it('lets a burst through, then parks until the next token', async () => {
      const p = rl();
      for (let i = 0; i < 3; i++) expect(await admit1({}, p)).toEqual({ kind: 'go', probe: false, counted: NOT_COUNTED });
      expect(await admit1({}, p)).toEqual({ kind: 'park', reason: 'rate_limited', until: T0 + 250 });
      expect(await admit1({ now: T0 + 125 }, p)).toEqual({ kind: 'park', reason: 'rate_limited', until: T0 + 250 });
      expect(await admit1({ now: T0 + 250 }, p)).toMatchObject({ kind: 'go' });
      expect(await admit1({ now: T0 + 250 }, p)).toEqual({ kind: 'park', reason: 'rate_limited', until: T0 + 500 });
    });

    it('consumes no token for a rate-limited park', async () => {
      const p = rl();
      for (let i = 0; i < 3; i++) await go({}, p);
      for (let i = 0; i < 20; i++) {
        const a = await admit1({ now: T0 + 10 * i }, p);
        expect(a).toMatchObject({ kind: 'park', reason: 'rate_limited' });
        // Had a refusal taken a token, the next one would lie 250 ms further. (Refills of
        // 10 ms are not exact in binary: the wait may round up by 1 ms.)
        expect(a.kind === 'park' && a.until >= T0 + 250 && a.until <= T0 + 251).toBe(true);
      }
      expect(await admit1({ now: T0 + 250 }, p)).toMatchObject({ kind: 'go' });
    });

    it('refills to at most burst after a long idle', async () => {
      const p = rl();
      for (let i = 0; i < 3; i++) await go({}, p);
      const later = T0 + 600_000;
      for (let i = 0; i < 3; i++) expect(await admit1({ now: later }, p)).toMatchObject({ kind: 'go' });
      expect(await admit1({ now: later }, p)).toEqual({ kind: 'park', reason: 'rate_limited', until: later + 250 });
    });

    it('keeps one bucket per endpoint', async () => {
      const p = rl();
      for (let i = 0; i < 3; i++) await go({}, p);
      expect(await admit1({}, p)).toMatchObject({ kind: 'park' });
      expect(await admit1({ endpointHash: EP2 }, p)).toMatchObject({ kind: 'go' });
    });

    it('takes no token while the circuit parks or the scope is paused', async () => {
      const p = rl({ circuit: { ...CB, enabled: true } });
      await openAt();
      for (let i = 0; i < 5; i++) expect(await admit1({ now: T0 + i }, p)).toMatchObject({ kind: 'park', reason: 'circuit_open' });
      await h.guards.resetCircuit(EP);
      await h.guards.pause({ kind: 'config', id: CFG });
      for (let i = 0; i < 5; i++) expect(await admit1({ now: T0 + 10 }, p)).toEqual({ kind: 'paused', scope: 'config' });
      expect(await h.guards.resume({ kind: 'config', id: CFG }, 'd1', T0, 30_000)).toBe('drain');
      expect(await h.guards.takeHeld({ kind: 'config', id: CFG }, 'd1', 10, T0, 30_000)).toEqual({ kind: 'done' });
      for (let i = 0; i < 3; i++) expect(await admit1({ now: T0 + 20 }, p)).toMatchObject({ kind: 'go' });
      expect(await admit1({ now: T0 + 20 }, p)).toMatchObject({ kind: 'park', reason: 'rate_limited' });
    });

    it('agrees with the token bucket of core/policy at irregular times (fractional tokens kept exactly)', async () => {
      let seed = 7;
      const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648);
      for (const [i, rate] of [1, 2.5, 7].entries()) {
        const burst = 2 + i;
        const p = rl({ rate, burst });
        const endpointHash = `rate${i}`.padEnd(32, '0');
        let model: Bucket | undefined;
        let now = T0;
        for (let step = 0; step < 150; step++) {
          now += next() % 900;
          model ??= { tokens: burst, at: now };
          const t = takeToken(model, now, rate, burst);
          const want: Admission = t.ok ? { kind: 'go', probe: false, counted: NOT_COUNTED } : { kind: 'park', reason: 'rate_limited', until: now + t.waitMs };
          expect(await admit1({ endpointHash, now }, p), `rate ${rate}, step ${step}`).toEqual(want);
        }
      }
    });

    it('spends the token of an admission the in-flight limit then holds back (the bucket is checked first)', async () => {
      const p = rl({ maxInflightPerEndpoint: 1 });
      await go({}, p);
      expect(await admit1({}, p)).toEqual({ kind: 'wait' });
      expect(await admit1({}, p)).toEqual({ kind: 'wait' });
      expect(await admit1({}, p)).toEqual({ kind: 'park', reason: 'rate_limited', until: T0 + 250 });
    });

    it("takeToken: an endpoint owner's own bucket, as core/policy's, apart from another owner's and from the global bucket", async () => {
      const model: Bucket = { tokens: 2, at: T0 };
      for (const now of [T0, T0, T0, T0 + 100, T0 + 500, T0 + 501, T0 + 1700]) {
        const t = takeToken(model, now, 2, 2);
        expect(await h.guards.takeToken!(EP, 'ep_a', 2, 2, now), `at +${now - T0}`).toBe(t.ok ? 0 : t.waitMs);
      }
      // Another owner at the same URL (another tenant's endpoint) has its full bucket.
      expect(await h.guards.takeToken!(EP, 'ep_b', 2, 2, T0 + 1700)).toBe(0);
      // The global per-endpoint bucket is untouched: its full burst goes.
      for (let i = 0; i < 3; i++) expect(await admit1({ now: T0 + 1700 }, rl())).toMatchObject({ kind: 'go' });
    });
  });
};
