import { expect, it } from 'vitest';
import type { Admission } from '../../core/ports/guards';
import { CB, EP, T0, completion, guardsSuite, params, req, type GuardsCaps, type MakeGuards } from './guards.fixtures';

// A copy (AdmitRequest.copy): a webhook consumed again after its partition moved, which the
// worker that had it may still be sending. While its id holds an in-flight lease in force it is
// answered 'elsewhere' (when that lease runs out) and takes nothing; a request that is not a
// copy takes the lease over as before.
export const copyCases = (make: MakeGuards, caps: GuardsCaps = {}): void => {
  guardsSuite('copies of a delivery in flight elsewhere', make, (h) => {
    const { admit1, complete } = h;
    const noCircuit = { ...CB, enabled: false };
    const p = params({ circuit: noCircuit, maxInflightPerEndpoint: 10, inflightLeaseMs: 4000 });
    const inflight = async (now: number) => (await h.guards.endpoint(EP, now, p)).inflight;

    it('answers a copy elsewhere while the lease is in force, with its end, and lets the same request go when it is no copy', async () => {
      expect(await admit1({ id: 'a' }, p)).toMatchObject({ kind: 'go' });
      expect(await admit1({ id: 'a', now: T0 + 1000, copy: true }, p)).toEqual({ kind: 'elsewhere', until: T0 + 4000 });
      // Nothing taken: the lease still ends when it did, and counts once.
      expect(await inflight(T0 + 1000)).toBe(1);
      expect(await inflight(T0 + 4000)).toBe(0);
      expect(await admit1({ id: 'a', now: T0 + 1000 }, p)).toMatchObject({ kind: 'go' });
      expect(await inflight(T0 + 4500)).toBe(1);
    });

    it('lets a copy go once the lease is completed or has run out, and any copy that holds none', async () => {
      await admit1({ id: 'a' }, p);
      await admit1({ id: 'b' }, p);
      await complete({ id: 'a', now: T0 + 100, outcome: 'success', counted: { endpoint: true, domain: false } }, p);
      expect(await admit1({ id: 'a', now: T0 + 200, copy: true }, p)).toMatchObject({ kind: 'go', counted: { endpoint: true } });
      expect(await admit1({ id: 'b', now: T0 + 4000, copy: true }, p)).toMatchObject({ kind: 'go' });
      expect(await admit1({ id: 'c', now: T0 + 4000, copy: true }, p)).toMatchObject({ kind: 'go' });
    });

    it('sees the leases taken earlier in the same call; a pause is answered first', async () => {
      const got = await h.guards.admit([req({ id: 'a' }), req({ id: 'a', copy: true }), req({ id: 'b', copy: true })], p);
      expect(got.map((a: Admission) => a.kind)).toEqual(['go', 'elsewhere', 'go']);
      await h.guards.pause({ kind: 'endpoint', id: EP });
      expect(await admit1({ id: 'a', now: T0 + 10, copy: true }, p)).toEqual({ kind: 'paused', scope: 'endpoint' });
    });

    if (caps.hostLimits !== false)
      it("reads the host's lease when the endpoint has no limit", async () => {
        const host = params({ circuit: noCircuit, maxInflightPerDomain: () => 5, inflightLeaseMs: 4000 });
        expect(await admit1({ id: 'a' }, host)).toMatchObject({ kind: 'go', counted: { endpoint: false, domain: true } });
        expect(await admit1({ id: 'a', now: T0 + 3999, copy: true }, host)).toEqual({ kind: 'elsewhere', until: T0 + 4000 });
        const none = params({ circuit: noCircuit });
        expect(await admit1({ id: 'z', copy: true }, none)).toMatchObject({ kind: 'go', counted: { endpoint: false, domain: false } });
      });

    it('leaves a completion of another id alone', async () => {
      await admit1({ id: 'a' }, p);
      await h.guards.complete([completion({ id: 'other', outcome: 'success', counted: { endpoint: true, domain: false } })], p);
      expect(await admit1({ id: 'a', now: T0 + 10, copy: true }, p)).toMatchObject({ kind: 'elsewhere' });
    });
  });
};
