import { expect, it } from 'vitest';
import { CB, EP, EP2, NOT_COUNTED, T0, guardsSuite, params, req, type MakeGuards } from './guards.fixtures';

// The circuit breaker (core/policy/circuit.ts) as the guards apply it: opening, probes,
// closing, and what admission answers in each state.
export const circuitCases = (make: MakeGuards): void => {
  guardsSuite('circuit breaker lifecycle', make, (h) => {
    const { admit1, go, complete, failAt, openAt, state } = h;
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
};
