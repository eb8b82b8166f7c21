import { expect, it } from 'vitest';
import { CB, EP, EP2, T0, completion, params, req, guardsSuite, type MakeGuards } from './guards.fixtures';

// The console's open-circuit and in-flight gauges (Guards.gauges), the same on every adapter.
export const guardsGaugesContract = (name: string, make: MakeGuards): void => {
  guardsSuite(`Guards contract (gauges): ${name}`, make, (h) => {
    const open = (endpointHash: string, now: number) =>
      h.guards.complete(
        Array.from({ length: CB.failure_threshold }, () => completion({ endpointHash, now, outcome: 'failure' })),
        params(),
      );

    it('counts the endpoints whose circuit is open or probing, not the closed ones', async () => {
      expect(await h.guards.gauges!(T0)).toEqual({ openCircuits: 0, inflight: 0 });
      await h.guards.complete([completion({ outcome: 'failure' })], params()); // one failure: still closed
      expect((await h.guards.gauges!(T0))?.openCircuits).toBe(0);
      await open(EP, T0);
      await open(EP2, T0);
      expect((await h.guards.gauges!(T0 + 1))?.openCircuits).toBe(2);
      // EP probes (half-open: still not closed), then two probe successes close it.
      const [a] = await h.guards.admit([req({ now: T0 + CB.recovery_timeout })], params());
      expect(a).toMatchObject({ kind: 'go', probe: true });
      expect((await h.guards.gauges!(T0 + CB.recovery_timeout))?.openCircuits).toBe(2);
      await h.guards.complete([completion({ now: T0 + CB.recovery_timeout, outcome: 'success', probe: true })], params());
      await h.guards.admit([req({ now: T0 + CB.recovery_timeout + 1 })], params());
      await h.guards.complete([completion({ now: T0 + CB.recovery_timeout + 1, outcome: 'success', probe: true })], params());
      expect((await h.guards.gauges!(T0 + CB.recovery_timeout + 2))?.openCircuits).toBe(1);
      await h.guards.resetCircuit(EP2);
      expect((await h.guards.gauges!(T0 + CB.recovery_timeout + 2))?.openCircuits).toBe(0);
    });

    it('counts the in-flight leases in force across endpoints: completed and run-out ones are not', async () => {
      const p = params({ maxInflightPerEndpoint: 10, inflightLeaseMs: 60_000 });
      await h.guards.admit([req({ id: 'wh_1' }), req({ id: 'wh_2' }), req({ id: 'wh_3', endpointHash: EP2, now: T0 + 30_000 })], p);
      expect((await h.guards.gauges!(T0 + 1))?.inflight).toBe(3);
      await h.guards.complete([completion({ id: 'wh_1', outcome: 'success', counted: { endpoint: true, domain: false } })], p);
      expect((await h.guards.gauges!(T0 + 1))?.inflight).toBe(2);
      // wh_2's lease ran out (its worker died): only wh_3 is still in flight.
      expect((await h.guards.gauges!(T0 + 60_000))?.inflight).toBe(1);
    });
  });
};
