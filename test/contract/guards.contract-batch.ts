import { expect, it } from 'vitest';
import { freshLimit, recordSample } from '../../core/policy/adaptive-limit';
import type { Admission, Completion } from '../../core/ports/guards';
import { CB, CFG, EP, EP2, LIMITS, T0, completion, params, req, guardsSuite, type GuardsCaps, type MakeGuards } from './guards.fixtures';

// Many requests (completions) of one endpoint in one call: each must see what the ones before
// it in the call did, exactly as if it came in a call of its own (the Redis scripts read each
// key once per call and follow it in memory).
const EP3 = 'ab'.repeat(16);

export const guardsBatchContract = (name: string, make: MakeGuards, caps: GuardsCaps = {}): void => {
  guardsSuite(`Guards contract (one call, many requests): ${name}`, make, (h) => {
    const kinds = (as: Admission[]) => as.map((a) => (a.kind === 'park' ? `park ${a.until - T0}` : a.kind === 'paused' ? `paused ${a.scope}` : a.kind));
    const noCircuit = { ...CB, enabled: false };
    const ok = (id: string, now: number, ms: number): Completion => ({
      ...completion({ id, now, outcome: 'success' }),
      counted: { endpoint: true, domain: false },
      sample: { ms, drop: false, timeout: false },
    });

    it('reaches the endpoint limit mid-call; leases that run out between two requests free room from then on, whatever the order of the times', async () => {
      const p = params({ circuit: noCircuit, maxInflightPerEndpoint: 2, inflightLeaseMs: 3000 });
      expect(kinds(await h.guards.admit([req({ id: 'a' }), req({ id: 'b', now: T0 + 1000 }), req({ id: 'c', now: T0 + 1000 })], p))).toEqual(['go', 'go', 'wait']);
      // a's lease runs out at T0 + 3000, b's at T0 + 4000, those taken at T0 + 3000 at T0 + 6000.
      const times = [1, 3000, 3000, 3000, 1, 4000, 4000, 6000, 6000, 6000];
      const got = await h.guards.admit(
        times.map((t) => req({ now: T0 + t })),
        p,
      );
      expect(kinds(got)).toEqual(['wait', 'go', 'wait', 'wait', 'wait', 'go', 'wait', 'go', 'wait', 'wait']);
      expect((await h.guards.endpoint(EP, T0 + 6000, p)).inflight).toBe(2);
    });

    it('frees the room of a lease taken in the call once it runs out, before the longer leases already there', async () => {
      const p = params({ circuit: noCircuit, maxInflightPerEndpoint: 2, inflightLeaseMs: 3000 });
      await h.guards.admit([req({ id: 'long' })], { ...p, inflightLeaseMs: 60_000 });
      await h.guards.admit([req({ id: 'short' })], p);
      const times = [1, 3000, 3000, 6000, 6000];
      expect(
        kinds(
          await h.guards.admit(
            times.map((t) => req({ now: T0 + t })),
            p,
          ),
        ),
      ).toEqual(['wait', 'go', 'wait', 'go', 'wait']);
    });

    it('counts a webhook admitted again while its lease is in force once (at a full limit it takes its own lease over)', async () => {
      const p = params({ circuit: noCircuit, maxInflightPerEndpoint: 2 });
      await h.guards.admit([req({ id: 'a' })], p);
      expect(kinds(await h.guards.admit([req({ id: 'a' }), req({ id: 'b' }), req({ id: 'c' }), req({ id: 'b' })], p))).toEqual(['go', 'go', 'wait', 'go']);
      expect((await h.guards.endpoint(EP, T0, p)).inflight).toBe(2);
    });

    if (caps.hostLimits !== false)
      it('shares the host limit across the endpoints of one call', async () => {
        const p = params({ circuit: noCircuit, maxInflightPerEndpoint: 5, maxInflightPerDomain: () => 3 });
        const got = await h.guards.admit([req(), req({ endpointHash: EP2 }), req(), req({ endpointHash: EP2 }), req({ endpointHash: EP2, lane: 'slow' })], p);
        expect(kinds(got)).toEqual(['go', 'go', 'go', 'wait', 'wait']);
      });

    it('feeds the adaptive limit the leases in force at each completion of one call, after those ended before it', async () => {
      const p = params({ circuit: noCircuit, maxInflightPerEndpoint: 50, inflightLeaseMs: 3000, limits: { ...LIMITS, initial: 6 } });
      const admitAll = async (ids: string[], now: number) =>
        expect(
          kinds(
            await h.guards.admit(
              ids.map((id) => req({ id, now })),
              p,
            ),
          ),
        ).toEqual(ids.map(() => 'go'));
      let model = freshLimit(p.limits);
      let wrong = freshLimit(p.limits);
      /** Completes [id, now, leases in force then] in one call; `wrong` is fed the count as it was at the call's start. */
      const completeAll = async (steps: [string, number, number][]) => {
        const start = (await h.guards.endpoint(EP, steps[0]![1], p)).inflight;
        await h.guards.complete(
          steps.map(([id, now], i) => ok(id, now, 10 + i)),
          p,
        );
        for (const [i, [, now, n]] of steps.entries()) {
          model = recordSample(model, { ms: 10 + i, drop: false, timeout: false }, n, now, p.limits);
          wrong = recordSample(wrong, { ms: 10 + i, drop: false, timeout: false }, start, now, p.limits);
        }
        expect(model.limit).not.toBe(wrong.limit);
        const [a] = await h.guards.admit([req({ id: `probe_${model.limit}`, now: steps[0]![1] })], p);
        expect(a).toMatchObject({ kind: 'go', seen: { limit: model.limit, latencyMs: model.latMs } });
        await h.guards.complete([{ ...completion({ id: `probe_${model.limit}`, outcome: 'success' }), counted: { endpoint: true, domain: false } }], p);
      };
      await admitAll(['d1', 'd2', 'd3'], T0);
      await admitAll(['d4', 'd5', 'd6'], T0 + 1000);
      // At one time: each completion counts one fewer.
      await completeAll([
        ['d1', T0 + 100, 6],
        ['d2', T0 + 100, 5],
        ['d4', T0 + 100, 4],
        ['d5', T0 + 100, 3],
      ]);
      await admitAll(['e1', 'e2', 'e3', 'e4', 'e5'], T0 + 100);
      // At later times, then an earlier one: d3's lease runs out at T0 + 3000.
      await completeAll([
        ['e1', T0 + 200, 7],
        ['e2', T0 + 300, 6],
        ['e3', T0 + 400, 5],
        ['e4', T0 + 500, 4],
        ['e5', T0 + 600, 3],
        ['d6', T0 + 3000, 1],
        ['d3', T0 + 2000, 1],
      ]);
    });

    it('opens the circuit mid-call once, ignores the rest of the call while open, and counts failures from zero after closing mid-call (a probe answer then counts as any other)', async () => {
      // A window longer than the recovery: failures from before the opening would still count.
      const p = params({ circuit: { ...CB, enabled: true, failure_window: 60_000 } });
      const fail = (now = T0, probe = false) => completion({ outcome: 'failure', now, probe });
      // A success while closed forgets the failures before it, within the call too.
      expect(await h.guards.complete([fail(), completion({ outcome: 'success' }), fail(), fail()], p)).toEqual([]);
      expect((await h.guards.endpoint(EP, T0, p)).circuit).toMatchObject({ state: 'CLOSED', failures: 2 });
      const moved = await h.guards.complete([fail(), fail(), completion({ outcome: 'success' }), fail()], p);
      expect(moved).toEqual([{ endpointHash: EP, state: 'OPEN', at: T0, openUntil: T0 + CB.recovery_timeout, openedCount: 1 }]);
      const at = T0 + CB.recovery_timeout;
      expect(kinds(await h.guards.admit([req({ now: at }), req({ now: at })], p))).toEqual(['go', `park ${CB.recovery_timeout + CB.probe_interval}`]);
      const probe = (outcome: 'success' | 'failure') => completion({ outcome, now: at, probe: true });
      const closed = await h.guards.complete([probe('success'), probe('success'), fail(at), probe('failure')], p);
      expect(closed).toEqual([{ endpointHash: EP, state: 'CLOSED', at, openUntil: 0, openedCount: 1 }]);
      expect((await h.guards.endpoint(EP, at, p)).circuit).toMatchObject({ state: 'CLOSED', failures: 2, opened_count: 1 });
    });

    it('answers each pause scope of one call on its own, a released webhook passing its pause', async () => {
      await h.guards.pause({ kind: 'config', id: 'cfg_paused' });
      await h.guards.pause({ kind: 'endpoint', id: EP2 });
      // The first two meet a paused key with the other one not read yet in the call.
      const got = await h.guards.admit(
        [
          req({ endpointHash: EP2, configId: 'cfg_other' }),
          req({ endpointHash: EP3, configId: 'cfg_paused' }),
          req(),
          req({ configId: 'cfg_paused' }),
          req({ configId: CFG }),
          req({ endpointHash: EP2 }),
          req({ endpointHash: EP2, passPause: ['endpoint'] }),
          req({ configId: 'cfg_paused', passPause: ['config'] }),
        ],
        params(),
      );
      expect(kinds(got)).toEqual(['paused endpoint', 'paused config', 'go', 'paused config', 'go', 'paused endpoint', 'go', 'go']);
    });

    it("keeps each webhook's last move in the queue of one call: queued, queued again, admitted", async () => {
      const p = params({ circuit: noCircuit, maxInflightPerEndpoint: 1, inflightLeaseMs: 3000 });
      await h.guards.admit([req({ id: 'x' })], p);
      // x's lease runs out at T0 + 3000: a takes the room, b waits again.
      const later = T0 + 3000;
      const got = await h.guards.admit(
        [req({ id: 'a' }), req({ id: 'b' }), req({ id: 'a', waited: true, now: later }), req({ id: 'b', waited: true, now: later }), req({ id: 'c', lane: 'slow', waited: true })],
        p,
      );
      expect(kinds(got)).toEqual(['wait', 'wait', 'go', 'wait', 'recovered']);
      expect((await h.guards.endpoint(EP, T0, p)).concurrency.queued).toBe(1);
      expect((await h.guards.endpoint(EP, later + 1000, p)).concurrency.queued).toBe(1);
    });

    it('spends and refills the rate bucket request by request within one call', async () => {
      const p = params({ circuit: noCircuit, rate: 2, burst: 2 });
      const got = await h.guards.admit([req(), req(), req(), req({ now: T0 + 500 }), req({ now: T0 + 500 }), req({ now: T0 + 200 })], p);
      expect(kinds(got)).toEqual(['go', 'go', 'park 500', 'go', 'park 1000', 'park 700']);
      expect(kinds(await h.guards.admit([req({ now: T0 + 1000 }), req({ now: T0 + 1000 })], p))).toEqual(['go', 'park 1200']);
    });

    it('bases the latency percentiles on the newest 200 samples, whatever the sizes of the calls that brought them', async () => {
      const p = params({ circuit: noCircuit, maxInflightPerEndpoint: 50 });
      // 60 slow samples, then 200 of 1..200 ms, in calls of 1 to 60 completions.
      const ms = [...Array.from({ length: 60 }, () => 1000), ...Array.from({ length: 200 }, (_, i) => i + 1)];
      const sizes = [1, 37, 5, 12, 60, 2, 23];
      let at = 0;
      for (let k = 0; at < ms.length; k++) {
        const call = ms.slice(at, at + sizes[k % sizes.length]!).map((x, i) => ok(`wh_s${at + i}`, T0 + at + i, x));
        await h.guards.complete(call, p);
        at += call.length;
        const seen = ms.slice(Math.max(0, at - 200), at);
        const v = (await h.guards.endpoint(EP, T0 + at, p)).concurrency.latency_ms;
        expect(v.samples, `after ${at}`).toBe(seen.length);
      }
      // The 60 slow ones are gone: p50 and p90 of 1..200.
      expect((await h.guards.endpoint(EP, T0 + at, p)).concurrency.latency_ms).toMatchObject({ p50: 100, p90: 180, samples: 200 });
    });
  });
};
