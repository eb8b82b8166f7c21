import { expect, it } from 'vitest';
import { freshLimit, recordSample } from '../../core/policy/adaptive-limit';
import type { AdmitRequest, Completion, GuardParams } from '../../core/ports/guards';
import { CB, EP, EP2, HOST, NOT_COUNTED, T0, guardsSuite, params, type GuardsCaps, type MakeGuards } from './guards.fixtures';

// The endpoint's in-flight limit, the fast and slow lanes, and the adaptive limit the fast
// lane follows (core/policy/adaptive-limit.ts).
export const endpointLimitCases = (make: MakeGuards, caps: GuardsCaps = {}): void => {
  guardsSuite('endpoint limit and lane rule', make, (h) => {
    const { admit1, go, complete } = h;
    const box = (max: number) => params({ circuit: { ...CB, enabled: false }, maxInflightPerEndpoint: max });
    const inflight = async (hash = EP) => (await h.guards.endpoint(hash, T0, params())).inflight;
    const done = (counted = { endpoint: true, domain: false }, sample?: Completion['sample']) => ({ outcome: 'success' as const, counted, ...(sample && { sample }) });
    /** One counted delivery of `hash` that took 2 s: recent latency above the 1 s threshold. */
    const makeSlow = async (p: GuardParams, patch: Partial<AdmitRequest> = {}) => {
      await go(patch, p);
      await complete(
        { ...done({ endpoint: true, domain: false }, { ms: 2000, drop: false, timeout: false }), endpointHash: patch.endpointHash ?? EP, host: patch.host ?? HOST },
        p,
      );
    };

    it('makes a fast endpoint at its limit wait in the fast lane (never diverted); a wait takes no lease', async () => {
      const p = box(2);
      expect(await admit1({}, p)).toMatchObject({ kind: 'go', probe: false, counted: { endpoint: true, domain: false }, seen: { fastLimit: 2, limit: 20 } });
      expect(await admit1({}, p)).toMatchObject({ kind: 'go', counted: { endpoint: true, domain: false } });
      expect(await inflight()).toBe(2);
      expect(await admit1({}, p)).toEqual({ kind: 'wait' });
      expect(await admit1({}, p)).toEqual({ kind: 'wait' });
      expect(await inflight()).toBe(2);
      expect(await admit1({ endpointHash: EP2 }, p)).toMatchObject({ kind: 'go' });
    });

    it('diverts a measurably slow endpoint at its limit, and only at its limit', async () => {
      const p = box(2);
      await makeSlow(p);
      expect((await h.guards.endpoint(EP, T0, p)).concurrency).toMatchObject({ slow: true, slow_reason: 'latency' });
      await go({}, p);
      await go({}, p);
      expect(await admit1({}, p)).toEqual({ kind: 'divert', reason: 'endpoint_inflight' });
      expect(await inflight()).toBe(2);
    });

    it('counts a timeout within the window as slow, and no longer after it', async () => {
      const p = box(1);
      await go({}, p);
      await complete({ ...done({ endpoint: true, domain: false }, { ms: 300, drop: true, timeout: true }), now: T0 }, p);
      expect((await h.guards.endpoint(EP, T0 + 1, p)).concurrency).toMatchObject({ slow: true, slow_reason: 'timeouts' });
      await go({ now: T0 + 1 }, p);
      expect(await admit1({ now: T0 + 2 }, p)).toEqual({ kind: 'divert', reason: 'endpoint_inflight' });
      // 300 ms is below the threshold: once the window has passed the endpoint waits its turn again.
      expect(await admit1({ now: T0 + 30_000 }, p)).toEqual({ kind: 'wait' });
    });

    it('ends the lease on completion, making room again', async () => {
      const p = box(2);
      await go({}, p);
      await go({}, p);
      await complete(done(), p);
      expect(await inflight()).toBe(1);
      expect(await admit1({}, p)).toMatchObject({ kind: 'go', counted: { endpoint: true } });
      expect(await admit1({}, p)).toEqual({ kind: 'wait' });
    });

    it('ends only the leases the admission took', async () => {
      const p = box(2);
      await go({}, p);
      await complete(done({ endpoint: false, domain: false }), p);
      expect(await inflight()).toBe(1);
    });

    it('stops counting a delivery never completed (its worker killed) once its lease runs out, however many admissions keep coming', async () => {
      const p = params({ circuit: { ...CB, enabled: false }, maxInflightPerEndpoint: 2, inflightLeaseMs: 10_000 });
      expect(await admit1({ id: 'wh_crashed' }, p)).toMatchObject({ kind: 'go', counted: { endpoint: true } });
      h.forgetAdmitted(); // its completion never comes
      // Steady traffic: every second one delivery goes and completes; the next one waits, as
      // the crashed delivery still holds the other slot.
      for (let t = 1000; t < 10_000; t += 1000) {
        expect(await admit1({ now: T0 + t }, p), `at +${t} ms`).toMatchObject({ kind: 'go' });
        expect(await admit1({ now: T0 + t }, p), `at +${t} ms`).toEqual({ kind: 'wait' });
        await complete({ outcome: 'success', now: T0 + t, counted: { endpoint: true, domain: false } }, p);
        expect((await h.guards.endpoint(EP, T0 + t, p)).inflight).toBe(1);
      }
      // Its lease is over at admission + 10 s: both slots are the live traffic's.
      expect((await h.guards.endpoint(EP, T0 + 10_000, p)).inflight).toBe(0);
      expect(await admit1({ now: T0 + 10_000 }, p)).toMatchObject({ kind: 'go' });
      expect(await admit1({ now: T0 + 10_000 }, p)).toMatchObject({ kind: 'go' });
      expect(await admit1({ now: T0 + 10_000 }, p)).toEqual({ kind: 'wait' });
    });

    it('lets a webhook consumed again after its worker died take over the lease its dead copy left, instead of waiting for it to run out', async () => {
      const p = params({ circuit: { ...CB, enabled: false }, maxInflightPerEndpoint: 1, maxInflightPerDomain: () => (caps.hostLimits === false ? 0 : 1), inflightLeaseMs: 4000 });
      expect(await admit1({ id: 'wh_moved' }, p)).toMatchObject({ kind: 'go' });
      h.forgetAdmitted(); // its worker was killed: no completion, no renewal
      // 3 s later its partition's next owner consumes it again: the same webhook goes; any other waits.
      expect(await admit1({ id: 'wh_other', now: T0 + 3000 }, p)).toEqual({ kind: 'wait' });
      expect(await admit1({ id: 'wh_moved', now: T0 + 3000 }, p)).toMatchObject({ kind: 'go', counted: { endpoint: true } });
      // Counted once, under the new admission's lease (it runs to T0 + 7 s, not T0 + 4 s).
      expect((await h.guards.endpoint(EP, T0 + 3000, p)).inflight).toBe(1);
      expect(await admit1({ id: 'wh_other', now: T0 + 5000 }, p)).toEqual({ kind: 'wait' });
      expect(await admit1({ id: 'wh_other', now: T0 + 7000 }, p)).toMatchObject({ kind: 'go' });
    });

    if (caps.hostLimits !== false)
      it('does the same for a host: a crashed delivery stops taking a share of the host limit when its lease runs out', async () => {
        const p = params({ circuit: { ...CB, enabled: false }, maxInflightPerDomain: () => 1, inflightLeaseMs: 10_000 });
        expect(await admit1({ id: 'wh_crashed' }, p)).toMatchObject({ kind: 'go', counted: { domain: true } });
        expect(await admit1({ endpointHash: EP2, now: T0 + 9_999 }, p)).toEqual({ kind: 'wait' });
        expect(await admit1({ endpointHash: EP2, now: T0 + 10_000 }, p)).toMatchObject({ kind: 'go', counted: { domain: true } });
      });

    if (caps.hostLimits !== false)
      it('keeps a renewed lease counting past its first end; a completed one stays ended', async () => {
        const p = params({ circuit: { ...CB, enabled: false }, maxInflightPerEndpoint: 2, maxInflightPerDomain: () => 5, inflightLeaseMs: 10_000 });
        const both = { endpoint: true, domain: true };
        await go({ id: 'wh_long' }, p);
        await go({ id: 'wh_short' }, p);
        await complete({ id: 'wh_short', outcome: 'success', now: T0 + 1000, counted: both }, p);
        await h.guards.renew(
          [
            { id: 'wh_long', endpointHash: EP, host: HOST, counted: both },
            { id: 'wh_short', endpointHash: EP, host: HOST, counted: both },
          ],
          T0 + 8000,
          p,
        );
        // wh_long now runs out at T0 + 18 s; wh_short is not brought back.
        expect((await h.guards.endpoint(EP, T0 + 17_999, p)).inflight).toBe(1);
        expect(await admit1({ now: T0 + 17_999 }, p)).toMatchObject({ kind: 'go' });
        expect(await admit1({ now: T0 + 17_999 }, p)).toEqual({ kind: 'wait' });
        expect((await h.guards.endpoint(EP, T0 + 18_000, p)).inflight).toBe(1);
      });

    it('never frees room for a completion of a delivery not in flight (no count below 0)', async () => {
      const p = box(2);
      await go({}, p);
      for (let i = 0; i < 5; i++) await complete(done(), p);
      expect(await inflight()).toBe(0);
      // Had it gone to -4, six admissions would go before a wait.
      expect(await admit1({}, p)).toMatchObject({ kind: 'go' });
      expect(await admit1({}, p)).toMatchObject({ kind: 'go' });
      expect(await admit1({}, p)).toEqual({ kind: 'wait' });
      expect(await inflight()).toBe(2);
      // And completing an endpoint that never counted anything leaves it at 0.
      await complete({ ...done(), endpointHash: EP2 }, p);
      expect(await inflight(EP2)).toBe(0);
    });

    it('sends the slow lane back ("recovered") while the endpoint is not slow, without counting it', async () => {
      const p = box(4);
      expect(await admit1({ lane: 'slow' }, p)).toEqual({ kind: 'recovered' });
      await go({}, p);
      expect(await admit1({ lane: 'slow' }, p)).toEqual({ kind: 'recovered' });
      expect(await inflight()).toBe(1);
    });

    it('delivers a slow endpoint from the slow lane (counted) even at or past its fast-lane limit', async () => {
      const p = box(2);
      await makeSlow(p);
      await go({}, p);
      await go({}, p);
      expect(await admit1({ lane: 'slow' }, p)).toMatchObject({ kind: 'go', probe: false, counted: { endpoint: true, domain: false } });
      expect(await admit1({ lane: 'slow' }, p)).toMatchObject({ kind: 'go' });
      expect(await inflight()).toBe(4);
    });

    it("holds an endpoint's own ceiling in both lanes, and answers a limit never above it", async () => {
      const p = box(10);
      expect(await admit1({ ceiling: 2 }, p)).toMatchObject({ kind: 'go', seen: { fastLimit: 2, limit: 2 } });
      await go({ ceiling: 2 }, p);
      expect(await admit1({ ceiling: 2 }, p)).toEqual({ kind: 'wait' });
      // Without its ceiling the same endpoint would go (its adaptive limit is 20).
      expect(await admit1({}, p)).toMatchObject({ kind: 'go' });
      await makeSlow(p, { endpointHash: EP2 });
      await go({ endpointHash: EP2, ceiling: 1 }, p);
      expect(await admit1({ endpointHash: EP2, lane: 'slow', ceiling: 1 }, p)).toEqual({ kind: 'wait' });
      expect(await admit1({ endpointHash: EP2, lane: 'slow' }, p)).toMatchObject({ kind: 'go' });
    });

    it('delivers from the slow lane without counting when the endpoint limit is off', async () => {
      expect(await admit1({ lane: 'slow' }, box(0))).toEqual({ kind: 'go', probe: false, counted: NOT_COUNTED });
      expect(await inflight()).toBe(0);
    });

    it('counts a webhook told to wait as queued until it is admitted', async () => {
      const p = box(1);
      await go({}, p);
      expect(await admit1({ id: 'wh_a' }, p)).toEqual({ kind: 'wait' });
      expect(await admit1({ id: 'wh_b' }, p)).toEqual({ kind: 'wait' });
      expect((await h.guards.endpoint(EP, T0, p)).concurrency.queued).toBe(2);
      await complete(done(), p);
      expect(await admit1({ id: 'wh_a', waited: true }, p)).toMatchObject({ kind: 'go' });
      expect((await h.guards.endpoint(EP, T0, p)).concurrency.queued).toBe(1);
      // A waiter that stopped asking drops out of the view.
      expect((await h.guards.endpoint(EP, T0 + 5000, p)).concurrency.queued).toBe(0);
    });
  });

  guardsSuite('adaptive limit', make, (h) => {
    const { admit1, go, complete } = h;
    const box = (max: number) => params({ circuit: { ...CB, enabled: false }, maxInflightPerEndpoint: max });
    const sample = (ms: number, drop = false, timeout = false) => ({ ms, drop, timeout });

    it('follows core/policy/adaptive-limit.ts sample for sample: grows on steady latency, shrinks when it rises and on drops', async () => {
      const p = box(1000);
      let model = freshLimit(p.limits);
      const steps = [...Array.from({ length: 20 }, () => sample(10)), ...Array.from({ length: 10 }, () => sample(200)), sample(30, true), sample(5000, true, true), sample(12)];
      for (const [i, x] of steps.entries()) {
        const now = T0 + i * 10;
        // Keep up to 15 in flight (as many as the limit lets go) while each completes.
        let n = (await h.guards.endpoint(EP, now, p)).inflight;
        while (n < 15 && (await admit1({ now }, p)).kind === 'go') n++;
        model = recordSample(model, x, n, now, p.limits);
        await complete({ outcome: 'success', now, counted: { endpoint: true, domain: false }, sample: x }, p);
        const v = (await h.guards.endpoint(EP, now, p)).concurrency;
        expect(v.limit, `step ${i}`).toBe(Math.max(1, Math.floor(model.limit)));
        expect(v.latency_ms.estimate, `step ${i}`).toBe(model.latMs);
        expect(v.latency_ms.min, `step ${i}`).toBe(model.minMs);
      }
      expect(model.limit).toBeLessThan(20);
    });

    it('shows the limit, latency percentiles over the window and the slow verdict', async () => {
      const p = box(50);
      for (let i = 0; i < 10; i++) {
        await go({ now: T0 + i }, p);
        await complete({ outcome: 'success', now: T0 + i, counted: { endpoint: true, domain: false }, sample: sample(10 * (i + 1)) }, p);
      }
      const v = (await h.guards.endpoint(EP, T0 + 10, p)).concurrency;
      expect(v).toMatchObject({ inflight: 0, queued: 0, slow: false, slow_reason: null });
      // Latency rising tenfold over its minimum has lowered the limit from its initial 20.
      expect(v.limit).toBeLessThan(20);
      expect(v.fast_lane_limit).toBe(v.limit);
      expect(v.latency_ms).toMatchObject({ p50: 50, p90: 90, samples: 10 });
      // The minimum drifts a little towards higher samples (a lasting change is learnt).
      expect(v.latency_ms.min).toBeGreaterThanOrEqual(10);
      expect(v.latency_ms.min).toBeLessThan(20);
      expect((await h.guards.endpoint(EP, T0 + 40_000, p)).concurrency.latency_ms).toMatchObject({ p50: null, p90: null, samples: 0 });
    });
  });
};
