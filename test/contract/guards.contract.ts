import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Webhook } from '../../core/domain/webhook';
import type { CircuitOutcome } from '../../core/policy/circuit';
import { takeToken, type Bucket } from '../../core/policy/token-bucket';
import { freshLimit, recordSample } from '../../core/policy/adaptive-limit';
import type { Admission, AdmitRequest, Completion, GuardParams, Guards, PauseScope } from '../../core/ports/guards';

// The observable semantics of Guards (core/ports/guards.ts), run against every adapter:
// memory (guards.memory.test.ts) and Redis (guards.redis.test.ts). Every request carries its
// own `now` and both adapters take time from it, so no test waits for real time to pass.

export type GuardsHarness = {
  guards: Guards;
  /** A second client on the same store (its own connection for Redis), for races. */
  peer: Guards;
  cleanup(): Promise<void>;
};

export type MakeGuards = () => Promise<GuardsHarness>;

export const T0 = 1_750_000_000_000;
export const EP = 'ep'.repeat(16);
export const EP2 = 'fe'.repeat(16);
export const HOST = 'hooks.example.com';
export const CFG = 'cfg_guards';

export const CB = { failure_threshold: 3, failure_window: 10_000, recovery_timeout: 30_000, probe_interval: 5_000, success_threshold: 2 };

/** Every guard off except the circuit; in-flight leases and circuit state live far longer than any test. */
export const LIMITS = { initial: 20, floor: 1, ceiling: 1000, tolerance: 2, slowThresholdMs: 1000, windowMs: 30_000 };

export const params = (patch: Partial<GuardParams> = {}): GuardParams => ({
  circuit: { ...CB, enabled: true },
  maxInflightPerEndpoint: 0,
  maxInflightPerDomain: () => 0,
  inflightLeaseMs: 3_600_000,
  rate: 0,
  burst: 0,
  circuitTtlMs: 86_400_000,
  limits: LIMITS,
  ...patch,
});

let seq = 0;
/** An admission request of a webhook of its own (a fresh id) unless `patch` names one. */
export const req = (patch: Partial<AdmitRequest> = {}): AdmitRequest => ({ endpointHash: EP, host: HOST, configId: CFG, lane: 'fast', now: T0, id: `wh_r${++seq}`, ...patch });

type Go = Extract<Admission, { kind: 'go' }>;

const NOT_COUNTED = { endpoint: false, domain: false };

export const completion = (patch: Partial<Completion> & { outcome: CircuitOutcome }): Completion => ({
  id: 'wh_never_admitted',
  endpointHash: EP,
  host: HOST,
  now: T0,
  probe: false,
  counted: NOT_COUNTED,
  ...patch,
});

export const webhook = (i: number, configId = CFG): Webhook => ({
  id: `wh_${String(i).padStart(4, '0')}`,
  config_id: configId,
  endpoint: 'https://hooks.example.com/in',
  endpoint_hash: EP,
  payload: `{"n":${i}}`,
  headers: {},
  attempt: 0,
  max_attempts: 5,
  deferrals: 0,
  created_at: '2025-06-15T14:13:20.000Z',
  scheduled_at: '2025-06-15T14:13:20.000Z',
});

export const guardsContract = (name: string, make: MakeGuards): void => {
  describe(`Guards contract: ${name}`, () => {
    let h: GuardsHarness;
    /** Deliveries admitted with a lease and not completed yet, oldest first. */
    let admitted: { id: string; endpointHash: string; host: string }[];
    beforeEach(async () => {
      h = await make();
      admitted = [];
    });
    afterEach(async () => {
      await h.cleanup();
    });

    const admit1 = async (patch: Partial<AdmitRequest> = {}, p = params(), g = h.guards): Promise<Admission> => {
      const r = req(patch);
      const [a] = await g.admit([r], p);
      if (!a) throw new Error('admit returned no admission');
      if (a.kind === 'go' && (a.counted.endpoint || a.counted.domain)) admitted.push({ id: r.id, endpointHash: r.endpointHash, host: r.host });
      return a;
    };
    const go = async (patch: Partial<AdmitRequest> = {}, p = params()): Promise<Go> => {
      const a = await admit1(patch, p);
      if (a.kind !== 'go') throw new Error(`expected go, got ${JSON.stringify(a)}`);
      return a;
    };
    /**
     * Completes a delivery: without an id, the oldest admitted one of the endpoint and host
     * (as its worker would), or, when there is none, one that was never admitted.
     */
    const complete = (patch: Partial<Completion> & { outcome: CircuitOutcome }, p = params()) => {
      const c = completion(patch);
      if (patch.id === undefined) {
        const i = admitted.findIndex((x) => x.endpointHash === c.endpointHash && x.host === c.host);
        if (i >= 0) c.id = admitted.splice(i, 1)[0]!.id;
      } else admitted = admitted.filter((x) => x.id !== patch.id);
      return h.guards.complete([c], p);
    };
    /** `n` non-probe failures at the given times (CLOSED failure counting). */
    const failAt = async (...times: number[]) => {
      for (const now of times) await complete({ outcome: 'failure', now });
    };
    /** Opens the circuit of EP with failures at `at`; returns open_until. */
    const openAt = async (at = T0): Promise<number> => {
      await failAt(...Array.from({ length: CB.failure_threshold }, () => at));
      const v = await h.guards.endpoint(EP, at, params());
      expect(v.circuit.state).toBe('OPEN');
      return at + CB.recovery_timeout;
    };
    const state = async (now: number, hash = EP) => (await h.guards.endpoint(hash, now, params())).circuit;

    describe('circuit breaker lifecycle', () => {
      it('admits a closed circuit without a probe, taking no lease when the limits are off', async () => {
        expect(await admit1()).toEqual({ kind: 'go', probe: false, counted: NOT_COUNTED });
        expect(await state(T0)).toEqual({ state: 'CLOSED', failures: 0, open_until: null, successes: 0, opened_count: 0 });
      });

      it('opens after failure_threshold failures within failure_window and parks until recovery_timeout', async () => {
        await failAt(T0, T0 + 4_000);
        expect(await state(T0 + 4_000)).toMatchObject({ state: 'CLOSED', failures: 2 });
        expect(await admit1({ now: T0 + 4_000 })).toMatchObject({ kind: 'go', probe: false });
        await failAt(T0 + 10_000); // exactly failure_window after the first: same window
        const openUntil = T0 + 10_000 + CB.recovery_timeout;
        expect(await state(T0 + 10_001)).toEqual({ state: 'OPEN', failures: 3, open_until: openUntil, successes: 0, opened_count: 1 });
        for (const now of [T0 + 10_001, T0 + 25_000, openUntil - 1]) {
          expect(await admit1({ now })).toEqual({ kind: 'park', reason: 'circuit_open', until: openUntil });
        }
      });

      it('does not open when the failures are spread wider than failure_window', async () => {
        // Windows start at T0, T0+12000 and T0+24000: never three failures in one.
        await failAt(T0, T0 + 6_000, T0 + 12_000, T0 + 18_000);
        expect(await state(T0 + 18_000)).toMatchObject({ state: 'CLOSED', failures: 2 });
        await failAt(T0 + 24_000);
        expect(await state(T0 + 24_000)).toMatchObject({ state: 'CLOSED', failures: 1 });
        expect(await admit1({ now: T0 + 24_000 })).toMatchObject({ kind: 'go', probe: false });
        // Two more within the window started at T0+24000 open it.
        await failAt(T0 + 25_000, T0 + 34_000);
        expect(await state(T0 + 34_000)).toMatchObject({ state: 'OPEN', open_until: T0 + 34_000 + CB.recovery_timeout });
      });

      it('resets the failure count on a success while closed', async () => {
        await failAt(T0, T0 + 1);
        await complete({ outcome: 'success', now: T0 + 2 });
        expect(await state(T0 + 2)).toMatchObject({ state: 'CLOSED', failures: 0 });
        await failAt(T0 + 3, T0 + 4);
        expect(await state(T0 + 4)).toMatchObject({ state: 'CLOSED', failures: 2 });
        await failAt(T0 + 5);
        expect(await state(T0 + 5)).toMatchObject({ state: 'OPEN' });
      });

      it('changes nothing on neutral outcomes (4xx, 429)', async () => {
        await failAt(T0, T0 + 1);
        for (let i = 0; i < 5; i++) await complete({ outcome: 'neutral', now: T0 + 2 + i });
        expect(await state(T0 + 10)).toMatchObject({ state: 'CLOSED', failures: 2 });
        await failAt(T0 + 11);
        expect(await state(T0 + 11)).toMatchObject({ state: 'OPEN' });
      });

      it('turns HALF_OPEN at recovery time with exactly one probe per probe_interval', async () => {
        const openUntil = await openAt();
        expect(await admit1({ now: openUntil })).toEqual({ kind: 'go', probe: true, counted: NOT_COUNTED });
        expect(await state(openUntil)).toMatchObject({ state: 'HALF_OPEN', successes: 0 });
        const next = openUntil + CB.probe_interval;
        expect(await admit1({ now: openUntil })).toEqual({ kind: 'park', reason: 'circuit_open', until: next });
        expect(await admit1({ now: next - 1 })).toEqual({ kind: 'park', reason: 'circuit_open', until: next });
        // The first probe never answered (lost): the next one goes on the cadence.
        expect(await admit1({ now: next })).toEqual({ kind: 'go', probe: true, counted: NOT_COUNTED });
        expect(await admit1({ now: next + 1 })).toEqual({ kind: 'park', reason: 'circuit_open', until: next + CB.probe_interval });
      });

      it('gives the probe to the first request of a batch only', async () => {
        const openUntil = await openAt();
        const got = await h.guards.admit(
          Array.from({ length: 5 }, () => req({ now: openUntil })),
          params(),
        );
        expect(got).toEqual([
          { kind: 'go', probe: true, counted: NOT_COUNTED },
          ...Array.from({ length: 4 }, () => ({ kind: 'park', reason: 'circuit_open', until: openUntil + CB.probe_interval })),
        ]);
      });

      it('lets exactly one probe through across 20 concurrent admissions from two clients', async () => {
        const openUntil = await openAt();
        const got = await Promise.all(Array.from({ length: 20 }, (_, i) => admit1({ now: openUntil + (i % 3) }, params(), i % 2 ? h.peer : h.guards)));
        const probes = got.filter((a) => a.kind === 'go');
        expect(probes).toHaveLength(1);
        expect(probes[0]).toMatchObject({ kind: 'go', probe: true });
        for (const a of got.filter((x) => x.kind !== 'go')) expect(a).toMatchObject({ kind: 'park', reason: 'circuit_open' });
        expect(await state(openUntil + 3)).toMatchObject({ state: 'HALF_OPEN' });
      });

      it('closes after success_threshold probe successes, the next probe going at once after a success', async () => {
        const openUntil = await openAt();
        const p1 = await go({ now: openUntil });
        await complete({ outcome: 'success', now: openUntil + 100, probe: p1.probe });
        expect(await state(openUntil + 100)).toMatchObject({ state: 'HALF_OPEN', successes: 1 });
        const p2 = await go({ now: openUntil + 101 });
        expect(p2.probe).toBe(true);
        expect(await admit1({ now: openUntil + 102 })).toEqual({ kind: 'park', reason: 'circuit_open', until: openUntil + 101 + CB.probe_interval });
        await complete({ outcome: 'success', now: openUntil + 200, probe: p2.probe });
        expect(await state(openUntil + 200)).toEqual({ state: 'CLOSED', failures: 0, open_until: null, successes: 0, opened_count: 1 });
        expect(await admit1({ now: openUntil + 201 })).toEqual({ kind: 'go', probe: false, counted: NOT_COUNTED });
        // Closed again for real: it takes a full threshold of failures to reopen.
        await failAt(openUntil + 300, openUntil + 301);
        expect(await state(openUntil + 301)).toMatchObject({ state: 'CLOSED', failures: 2 });
        await failAt(openUntil + 302);
        expect(await state(openUntil + 302)).toMatchObject({ state: 'OPEN', opened_count: 2, open_until: openUntil + 302 + CB.recovery_timeout });
      });

      it('re-opens on a failed probe until now + probe_interval, without counting a new opening', async () => {
        const openUntil = await openAt();
        await go({ now: openUntil });
        const failedAt = openUntil + 700;
        await complete({ outcome: 'failure', now: failedAt, probe: true, error: 'HTTP 503' });
        expect(await state(failedAt)).toEqual({ state: 'OPEN', failures: 3, open_until: failedAt + CB.probe_interval, successes: 0, opened_count: 1 });
        expect(await admit1({ now: failedAt + CB.probe_interval - 1 })).toEqual({ kind: 'park', reason: 'circuit_open', until: failedAt + CB.probe_interval });
        expect(await admit1({ now: failedAt + CB.probe_interval })).toEqual({ kind: 'go', probe: true, counted: NOT_COUNTED });
      });

      it('forgets earlier probe successes when a probe fails', async () => {
        const openUntil = await openAt();
        await go({ now: openUntil });
        await complete({ outcome: 'success', now: openUntil + 1, probe: true });
        await go({ now: openUntil + 2 });
        await complete({ outcome: 'failure', now: openUntil + 3, probe: true });
        expect(await state(openUntil + 3)).toMatchObject({ state: 'OPEN', successes: 0 });
        const reopened = openUntil + 3 + CB.probe_interval;
        await go({ now: reopened });
        await complete({ outcome: 'success', now: reopened + 1, probe: true });
        expect(await state(reopened + 1)).toMatchObject({ state: 'HALF_OPEN', successes: 1 });
      });

      it('ignores late answers of non-probe attempts while OPEN and HALF_OPEN', async () => {
        // Three attempts go out while closed; the circuit opens before they answer.
        const early = [await go(), await go(), await go()];
        expect(early.every((a) => !a.probe)).toBe(true);
        const openUntil = await openAt(T0 + 10);
        await complete({ outcome: 'success', now: T0 + 20 });
        await complete({ outcome: 'failure', now: T0 + 21 });
        expect(await state(T0 + 21)).toEqual({ state: 'OPEN', failures: 3, open_until: openUntil, successes: 0, opened_count: 1 });
        await go({ now: openUntil });
        await complete({ outcome: 'success', now: openUntil + 1 });
        await complete({ outcome: 'success', now: openUntil + 2 });
        await complete({ outcome: 'failure', now: openUntil + 3 });
        expect(await state(openUntil + 3)).toMatchObject({ state: 'HALF_OPEN', successes: 0 });
        expect(await admit1({ now: openUntil + 4 })).toEqual({ kind: 'park', reason: 'circuit_open', until: openUntil + CB.probe_interval });
      });

      it('keeps the probe slot spent on a neutral probe outcome', async () => {
        const openUntil = await openAt();
        await go({ now: openUntil });
        await complete({ outcome: 'neutral', now: openUntil + 10, probe: true });
        expect(await state(openUntil + 10)).toMatchObject({ state: 'HALF_OPEN', successes: 0 });
        expect(await admit1({ now: openUntil + 11 })).toEqual({ kind: 'park', reason: 'circuit_open', until: openUntil + CB.probe_interval });
      });

      it('reports an OPEN circuit whose recovery time has passed as HALF_OPEN', async () => {
        const openUntil = await openAt();
        expect(await state(openUntil - 1)).toMatchObject({ state: 'OPEN', open_until: openUntil });
        expect(await state(openUntil)).toMatchObject({ state: 'HALF_OPEN', open_until: openUntil });
      });

      it('resetCircuit closes the circuit and forgets its counts', async () => {
        await openAt();
        await h.guards.resetCircuit(EP);
        expect(await state(T0 + 1)).toEqual({ state: 'CLOSED', failures: 0, open_until: null, successes: 0, opened_count: 0 });
        expect(await admit1({ now: T0 + 1 })).toEqual({ kind: 'go', probe: false, counted: NOT_COUNTED });
        await failAt(T0 + 2, T0 + 3);
        expect(await state(T0 + 3)).toMatchObject({ state: 'CLOSED', failures: 2 });
      });

      it('keeps circuits per endpoint', async () => {
        await openAt();
        expect(await admit1({ endpointHash: EP2, now: T0 + 1 })).toMatchObject({ kind: 'go', probe: false });
        expect(await state(T0 + 1, EP2)).toMatchObject({ state: 'CLOSED', failures: 0 });
      });

      it('neither parks nor counts when the circuit is disabled', async () => {
        const off = params({ circuit: { ...CB, enabled: false } });
        for (let i = 0; i < 10; i++) await complete({ outcome: 'failure', now: T0 + i }, off);
        expect(await state(T0 + 10)).toMatchObject({ state: 'CLOSED', failures: 0 });
        expect(await admit1({ now: T0 + 10 }, off)).toEqual({ kind: 'go', probe: false, counted: NOT_COUNTED });
        // An OPEN circuit is not consulted while disabled.
        await openAt(T0 + 20);
        expect(await admit1({ now: T0 + 21 }, off)).toEqual({ kind: 'go', probe: false, counted: NOT_COUNTED });
      });
    });

    describe('endpoint limit and lane rule', () => {
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
        admitted = []; // its completion never comes
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

      it('does the same for a host: a crashed delivery stops taking a share of the host limit when its lease runs out', async () => {
        const p = params({ circuit: { ...CB, enabled: false }, maxInflightPerDomain: () => 1, inflightLeaseMs: 10_000 });
        expect(await admit1({ id: 'wh_crashed' }, p)).toMatchObject({ kind: 'go', counted: { domain: true } });
        expect(await admit1({ endpointHash: EP2, now: T0 + 9_999 }, p)).toEqual({ kind: 'wait' });
        expect(await admit1({ endpointHash: EP2, now: T0 + 10_000 }, p)).toMatchObject({ kind: 'go', counted: { domain: true } });
      });

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

    describe('adaptive limit', () => {
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

    describe('domain limit', () => {
      const SHARED = 'shared.example.com';
      const OTHER = 'other.example.com';
      // shared.example.com is overridden down to 2; every other host gets 10.
      const dom = (endpointMax = 0) =>
        params({ circuit: { ...CB, enabled: false }, maxInflightPerEndpoint: endpointMax, maxInflightPerDomain: (host) => (host === SHARED ? 2 : 10) });
      const slowSample = { ms: 2000, drop: false, timeout: false };

      it('makes two endpoints on one host share the host budget: both lanes wait', async () => {
        const p = dom();
        expect(await admit1({ endpointHash: EP, host: SHARED }, p)).toEqual({ kind: 'go', probe: false, counted: { endpoint: false, domain: true } });
        expect(await admit1({ endpointHash: EP2, host: SHARED }, p)).toMatchObject({ kind: 'go', counted: { domain: true } });
        expect(await admit1({ endpointHash: EP, host: SHARED }, p)).toEqual({ kind: 'wait' });
        expect(await admit1({ endpointHash: EP2, host: SHARED, lane: 'slow' }, p)).toEqual({ kind: 'wait' });
        // Another host is not affected.
        for (let i = 0; i < 10; i++) expect(await admit1({ endpointHash: EP, host: OTHER }, p)).toMatchObject({ kind: 'go' });
        expect(await admit1({ endpointHash: EP, host: OTHER }, p)).toEqual({ kind: 'wait' });
      });

      it('diverts a slow endpoint at a full host', async () => {
        const p = dom(10);
        await go({ host: SHARED }, p);
        await complete({ outcome: 'success', host: SHARED, counted: { endpoint: true, domain: true }, sample: slowSample }, p);
        await go({ endpointHash: EP2, host: SHARED }, p);
        await go({ endpointHash: EP2, host: SHARED }, p);
        expect(await admit1({ host: SHARED }, p)).toEqual({ kind: 'divert', reason: 'domain_inflight' });
        expect(await admit1({ endpointHash: EP2, host: SHARED }, p)).toEqual({ kind: 'wait' });
        expect(await admit1({ host: SHARED, lane: 'slow' }, p)).toEqual({ kind: 'wait' });
      });

      it('frees the host budget on completion, whichever endpoint completes', async () => {
        const p = dom();
        await go({ endpointHash: EP, host: SHARED }, p);
        await go({ endpointHash: EP2, host: SHARED }, p);
        await complete({ outcome: 'success', endpointHash: EP, host: SHARED, counted: { endpoint: false, domain: true } }, p);
        expect(await admit1({ endpointHash: EP2, host: SHARED }, p)).toMatchObject({ kind: 'go', counted: { domain: true } });
        expect(await admit1({ endpointHash: EP, host: SHARED, lane: 'slow' }, p)).toEqual({ kind: 'wait' });
        for (let i = 0; i < 2; i++) await complete({ outcome: 'success', endpointHash: EP2, host: SHARED, counted: { endpoint: false, domain: true } }, p);
        // Extra completions (of deliveries not in flight) never take the host below 0.
        for (let i = 0; i < 6; i++) await complete({ outcome: 'success', endpointHash: EP, host: SHARED, counted: { endpoint: false, domain: true } }, p);
        await go({ endpointHash: EP, host: SHARED }, p);
        await go({ endpointHash: EP, host: SHARED }, p);
        expect(await admit1({ endpointHash: EP, host: SHARED }, p)).toEqual({ kind: 'wait' });
      });

      it('shrinks the host limit on drops, below its ceiling', async () => {
        const p = dom();
        for (let i = 0; i < 7; i++) {
          await go({ host: OTHER, now: T0 + i }, p);
          await complete({ outcome: 'failure', host: OTHER, now: T0 + i, counted: { endpoint: false, domain: true }, sample: { ms: 5, drop: true, timeout: false } }, p);
        }
        // 10 × 0.9^7 = 4.78: four at once.
        for (let i = 0; i < 4; i++) expect(await admit1({ host: OTHER }, p)).toMatchObject({ kind: 'go' });
        expect(await admit1({ host: OTHER }, p)).toEqual({ kind: 'wait' });
      });

      it('checks the host before the endpoint and counts both', async () => {
        const p = dom(1);
        await complete({ outcome: 'success', counted: { endpoint: true, domain: false }, sample: slowSample }, p);
        expect(await admit1({ host: SHARED }, p)).toMatchObject({ kind: 'go', probe: false, counted: { endpoint: true, domain: true } });
        await go({ endpointHash: EP2, host: SHARED }, p);
        // Both limits are reached for EP: the host is reported.
        expect(await admit1({ host: SHARED }, p)).toEqual({ kind: 'divert', reason: 'domain_inflight' });
        await complete({ outcome: 'success', endpointHash: EP2, host: SHARED, counted: { endpoint: true, domain: true } }, p);
        expect(await admit1({ host: SHARED }, p)).toEqual({ kind: 'divert', reason: 'endpoint_inflight' });
      });

      it('counts the host on a slow-lane delivery', async () => {
        const p = dom(2);
        await complete({ outcome: 'success', counted: { endpoint: true, domain: false }, sample: slowSample }, p);
        await go({ host: SHARED }, p);
        await go({ endpointHash: EP, host: OTHER }, p); // EP: 2 in flight; SHARED: 1
        expect(await admit1({ host: SHARED, lane: 'slow' }, p)).toMatchObject({ kind: 'go', probe: false, counted: { endpoint: true, domain: true } });
        expect(await admit1({ endpointHash: EP2, host: SHARED }, p)).toEqual({ kind: 'wait' });
      });
    });

    describe('rate limit', () => {
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
    });

    describe('pause, hold, resume, drain', () => {
      const EPS: PauseScope = { kind: 'endpoint', id: EP };
      const CFGS: PauseScope = { kind: 'config', id: CFG };

      it('answers paused for a paused endpoint or config, endpoint first', async () => {
        await h.guards.pause(CFGS);
        expect(await admit1()).toEqual({ kind: 'paused', scope: 'config' });
        expect(await admit1({ configId: 'cfg_other' })).toMatchObject({ kind: 'go' });
        await h.guards.pause(EPS);
        expect(await admit1()).toEqual({ kind: 'paused', scope: 'endpoint' });
        expect(await admit1({ configId: 'cfg_other' })).toEqual({ kind: 'paused', scope: 'endpoint' });
        expect(await admit1({ endpointHash: EP2, configId: 'cfg_other' })).toMatchObject({ kind: 'go' });
      });

      it('pauses before the circuit: a paused scope takes no probe', async () => {
        const openUntil = await openAt();
        await h.guards.pause(EPS);
        expect(await admit1({ now: openUntil })).toEqual({ kind: 'paused', scope: 'endpoint' });
        expect(await state(openUntil - 1)).toMatchObject({ state: 'OPEN' });
      });
      // Hold, resume and drain: guards.contract-pause.ts.
    });

    describe('endpoint view', () => {
      it('shows defaults for an unknown endpoint', async () => {
        expect(await h.guards.endpoint(EP, T0, params())).toEqual({
          endpoint_hash: EP,
          circuit: { state: 'CLOSED', failures: 0, open_until: null, successes: 0, opened_count: 0 },
          inflight: 0,
          paused: false,
          draining: false,
          parked_while_paused: 0,
          last_errors: [],
          concurrency: {
            limit: 20,
            fast_lane_limit: 0,
            latency_ms: { estimate: null, min: null, p50: null, p90: null, samples: 0 },
            inflight: 0,
            queued: 0,
            slow: false,
            slow_reason: null,
          },
        });
      });

      it('shows circuit, in-flight and pause state together', async () => {
        const p = params({ maxInflightPerEndpoint: 10 });
        await go({}, p);
        await go({}, p);
        await go({}, p);
        await complete({ outcome: 'failure', now: T0 + 1, counted: { endpoint: true, domain: false }, error: 'HTTP 500' }, p);
        await h.guards.pause({ kind: 'endpoint', id: EP });
        await h.guards.holdPaused({ kind: 'endpoint', id: EP }, 'x');
        await h.guards.holdPaused({ kind: 'endpoint', id: EP }, 'y');
        // A paused config does not show on the endpoint.
        await h.guards.pause({ kind: 'config', id: CFG });
        await h.guards.holdPaused({ kind: 'config', id: CFG }, 'z');
        expect(await h.guards.endpoint(EP, T0 + 2, params())).toEqual({
          endpoint_hash: EP,
          circuit: { state: 'CLOSED', failures: 1, open_until: null, successes: 0, opened_count: 0 },
          inflight: 2,
          paused: true,
          draining: false,
          parked_while_paused: 2,
          last_errors: [{ at: new Date(T0 + 1).toISOString(), error: 'HTTP 500' }],
          concurrency: expect.objectContaining({ limit: 20, inflight: 2 }),
        });
        await h.guards.resume({ kind: 'endpoint', id: EP }, 'd1', T0, 30_000);
        expect(await h.guards.endpoint(EP, T0 + 3, params())).toMatchObject({ paused: false, draining: true, parked_while_paused: 2 });
      });

      it('keeps the last 10 errors, newest first, of any outcome, and skips completions without one', async () => {
        for (let i = 0; i < 12; i++) {
          const outcome: CircuitOutcome = i % 3 === 0 ? 'neutral' : i % 3 === 1 ? 'failure' : 'success';
          await complete({ outcome, now: T0 + i * 1000, error: `error ${i}` }, params({ circuit: { ...CB, enabled: false } }));
          await complete({ outcome: 'success', now: T0 + i * 1000 + 1 });
        }
        const v = await h.guards.endpoint(EP, T0 + 20_000, params());
        expect(v.last_errors).toEqual(Array.from({ length: 10 }, (_, k) => ({ at: new Date(T0 + (11 - k) * 1000).toISOString(), error: `error ${11 - k}` })));
        expect((await h.guards.endpoint(EP2, T0, params())).last_errors).toEqual([]);
      });

      it('cuts an error text to 200 characters', async () => {
        await complete({ outcome: 'failure', error: 'x'.repeat(500) });
        const [e] = (await h.guards.endpoint(EP, T0, params())).last_errors;
        expect(e?.error).toBe('x'.repeat(200));
      });
    });
  });
};
