import { expect, it } from 'vitest';
import { CB, EP, EP2, T0, guardsSuite, params, type MakeGuards } from './guards.fixtures';

// The per-host in-flight limit, shared by every endpoint on the host and checked before the
// endpoint's.
export const domainLimitCases = (make: MakeGuards): void => {
  guardsSuite('domain limit', make, (h) => {
    const { admit1, go, complete } = h;
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
};
