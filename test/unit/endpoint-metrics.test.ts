import { describe, expect, it } from 'vitest';
import { observedGuards } from '../../core/metrics/observed-guards';
import { circuitValue, createTopEndpoints } from '../../core/metrics/top-n';
import type { Admission, AdmitRequest, CircuitTransition, Guards } from '../../core/ports/guards';
import { createNodeMetrics } from '../../workers/node/metrics';

const req = (endpointHash: string): AdmitRequest => ({ endpointHash, host: 'h', configId: 'c', lane: 'fast', now: 0, id: endpointHash });

describe('top-N endpoints', () => {
  it('labels the busiest N and aggregates the rest, with bounded memory, over 10,000 endpoints', () => {
    const top = createTopEndpoints(5, 50);
    // Five busy endpoints among 10,000 one-off ones, interleaved.
    for (let i = 0; i < 10_000; i++) {
      top.touch(`once-${i}`, true);
      top.touch(`busy-${i % 5}`, true);
    }
    const { top: labelled, rest } = top.split();
    expect(labelled.map(([k]) => k).sort()).toEqual(['busy-0', 'busy-1', 'busy-2', 'busy-3', 'busy-4']);
    expect(top.size()).toBeLessThanOrEqual(50);
    expect(rest.length).toBe(top.size() - 5);
  });

  it('exports at most N + 1 endpoint label values whatever the number of endpoints', async () => {
    const m = createNodeMetrics([], { topEndpoints: 3 });
    for (let i = 0; i < 10_000; i++) {
      const e = m.pipeline.endpoints.touch(`e${i}`, true);
      e.limit = i % 7;
      if (i % 100 === 0) e.openUntil = Date.now() + 60_000;
    }
    const text = (await m.exposition()).body;
    const endpoints = (name: string) => new Set([...text.matchAll(new RegExp(`^${name}\\{[^}]*endpoint="([^"]+)"`, 'gm'))].map((x) => x[1]));
    expect(endpoints('howk_circuit_state').size).toBe(4);
    expect(endpoints('howk_circuit_state').has('other')).toBe(true);
    expect(endpoints('howk_concurrency_limit').size).toBe(4);
  });
});

describe('observed guards', () => {
  const inner = (admissions: Admission[], moved: CircuitTransition[] = []): Guards => ({ admit: async () => admissions, complete: async () => moved }) as unknown as Guards;

  it('counts admitted traffic and the limit it went under, and marks circuits opened by a park', async () => {
    const top = createTopEndpoints(10);
    const g = observedGuards(
      inner([
        { kind: 'go', probe: false, counted: { endpoint: true, domain: true }, seen: { fastLimit: 8, limit: 12, latencyMs: 30 } },
        { kind: 'park', reason: 'circuit_open', until: 5_000 },
        { kind: 'park', reason: 'rate_limited', until: 5_000 },
      ]),
      top,
    );
    await g.admit([req('a'), req('b'), req('c')], {} as never);
    const a = top.touch('a');
    expect(a.count).toBe(1);
    expect(a.limit).toBe(12);
    expect(circuitValue(top.touch('b'), 1_000)).toBe(2);
    // After open_until without a close seen: half-open.
    expect(circuitValue(top.touch('b'), 6_000)).toBe(1);
    expect(circuitValue(top.touch('c'), 1_000)).toBe(0);
  });

  it('follows circuit transitions of completions', async () => {
    const top = createTopEndpoints(10);
    const opened = observedGuards(inner([], [{ endpointHash: 'x', state: 'OPEN', at: 0, openUntil: 9_000, openedCount: 1 }]), top);
    await opened.complete([], {} as never);
    expect(circuitValue(top.touch('x'), 100)).toBe(2);
    const closed = observedGuards(inner([], [{ endpointHash: 'x', state: 'CLOSED', at: 0, openUntil: 0, openedCount: 1 }]), top);
    await closed.complete([], {} as never);
    expect(circuitValue(top.touch('x'), 100)).toBe(0);
  });
});
