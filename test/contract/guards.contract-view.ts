import { expect, it } from 'vitest';
import type { CircuitOutcome } from '../../core/policy/circuit';
import { CB, CFG, EP, EP2, T0, guardsSuite, params, type MakeGuards } from './guards.fixtures';

// The endpoint view (Guards.endpoint): circuit, in-flight, pause state and the last errors.
export const endpointViewCases = (make: MakeGuards): void => {
  guardsSuite('endpoint view', make, (h) => {
    const { go, complete } = h;
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
};
