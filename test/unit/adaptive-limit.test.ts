import { describe, expect, it } from 'vitest';
import { allowed, freshLimit, laneDecision, limitSample, percentiles, recordSample, slowLanePace, slowness, type LimitState } from '../../core/policy/adaptive-limit';
import type { Clock } from '../../core/ports/clock';
import { LIMITS, VECTORS } from '../fixtures/limit-vectors';

// The adaptive limit (core/policy/adaptive-limit.ts) on a fake clock.

const fakeClock = (t = 1_750_000_000_000): Clock & { tick(ms: number): void } => ({ now: () => t, tick: (ms) => void (t += ms) });
const run = (name: keyof typeof VECTORS): LimitState[] => {
  const v = VECTORS[name]!;
  let s = freshLimit(v.params);
  return v.steps.map((x) => (s = recordSample(s, x, x.inflight, x.at, v.params)));
};
const last = <T>(xs: T[]): T => xs[xs.length - 1]!;

describe('adaptive limit', () => {
  it('starts at the initial limit, clamped into [floor, ceiling]', () => {
    expect(freshLimit(LIMITS).limit).toBe(20);
    expect(freshLimit({ ...LIMITS, ceiling: 5 }).limit).toBe(5);
    expect(freshLimit({ ...LIMITS, initial: 1, floor: 3 }).limit).toBe(3);
    // A ceiling below the floor wins (a host limit of 1 with a floor of 2).
    expect(freshLimit({ ...LIMITS, floor: 2, ceiling: 1 }).limit).toBe(1);
  });

  it('grows while latency stays near its minimum and the limit is in use', () => {
    const states = run('steady low latency, limit in use: grows');
    for (let i = 1; i < states.length; i++) expect(states[i]!.limit).toBeGreaterThanOrEqual(states[i - 1]!.limit);
    // Up to about twice what is in flight (40): beyond that the limit is not in use.
    expect(allowed(last(states))).toBeGreaterThanOrEqual(80);
    expect(allowed(last(states))).toBeLessThan(90);
  });

  it('does not grow a limit that is not in use', () => {
    expect(last(run('steady low latency, limit idle: stays')).limit).toBe(20);
  });

  it('shrinks when latency rises well above its minimum', () => {
    const states = run('latency rising from 20 ms to 400 ms: shrinks');
    const peak = states[19]!.limit;
    expect(peak).toBeGreaterThan(20);
    expect(last(states).limit).toBeLessThan(peak / 2);
    expect(last(states).minMs).toBeLessThan(40);
  });

  it('backs off on timeouts and 5xx down to the floor, never below, and remembers the timeout', () => {
    const states = run('timeouts and 5xx: backs off to the floor');
    expect(last(states).limit).toBe(2);
    expect(Math.min(...states.map((s) => s.limit))).toBe(2);
    // A timeout's duration raises the latency estimate; a fast 5xx does not lower it.
    expect(last(states).latMs).toBeGreaterThan(10_000);
    expect(last(states).timeoutAt).toBe(last(VECTORS['timeouts and 5xx: backs off to the floor']!.steps).at);
  });

  it('stays within floor and ceiling whatever comes', () => {
    for (const [name, v] of Object.entries(VECTORS)) {
      for (const s of run(name as keyof typeof VECTORS)) {
        expect(s.limit, name).toBeGreaterThanOrEqual(Math.min(v.params.floor, v.params.ceiling));
        expect(s.limit, name).toBeLessThanOrEqual(v.params.ceiling);
      }
    }
  });

  it('recovers after a slow spell: back to its ceiling once latency is low again', () => {
    const states = run('recovers after a slow spell');
    expect(states[24]!.limit).toBeLessThan(states[9]!.limit);
    expect(last(states).limit).toBe(64);
  });

  it('calls an endpoint slow on recent latency above the threshold or a timeout within the window (fake clock)', () => {
    const clock = fakeClock();
    let s = freshLimit(LIMITS);
    expect(slowness(s, clock.now(), LIMITS)).toEqual({ slow: false, reason: null });
    for (let i = 0; i < 10; i++) s = recordSample(s, { ms: 1500, drop: false, timeout: false }, 1, clock.now(), LIMITS);
    expect(slowness(s, clock.now(), LIMITS)).toEqual({ slow: true, reason: 'latency' });
    for (let i = 0; i < 30; i++) s = recordSample(s, { ms: 50, drop: false, timeout: false }, 1, clock.now(), LIMITS);
    expect(slowness(s, clock.now(), LIMITS)).toEqual({ slow: false, reason: null });
    s = recordSample(s, { ms: 300, drop: true, timeout: true }, 1, clock.now(), LIMITS);
    clock.tick(29_999);
    expect(slowness(s, clock.now(), LIMITS)).toEqual({ slow: true, reason: 'timeouts' });
    clock.tick(1);
    expect(slowness(s, clock.now(), LIMITS)).toEqual({ slow: false, reason: null });
  });

  it('turns an answer into a sample: timeouts, 429 and circuit failures drop; successes measure; neutral says nothing', () => {
    expect(limitSample({ kind: 'timeout', error: 'x', durationMs: 30_000 }, 'failure')).toEqual({ ms: 30_000, drop: true, timeout: true });
    expect(limitSample({ kind: 'response', status: 503, retryAfter: null, bodySnippet: '', durationMs: 4 }, 'failure')).toEqual({ ms: 4, drop: true, timeout: false });
    expect(limitSample({ kind: 'network', error: 'ECONNREFUSED', durationMs: 1 }, 'failure')).toEqual({ ms: 1, drop: true, timeout: false });
    expect(limitSample({ kind: 'response', status: 429, retryAfter: '1', bodySnippet: '', durationMs: 2 }, 'neutral')).toEqual({ ms: 2, drop: true, timeout: false });
    expect(limitSample({ kind: 'response', status: 404, retryAfter: null, bodySnippet: '', durationMs: 9 }, 'success')).toEqual({ ms: 9, drop: false, timeout: false });
    expect(limitSample({ kind: 'blocked', error: 'ssrf', durationMs: 0 }, 'neutral')).toBeUndefined();
  });
});

describe('the lane rule (slow/fast decision table)', () => {
  it.each([
    ['fast', false, false, 'go'],
    ['fast', false, true, 'go'],
    ['fast', true, false, 'wait'],
    ['fast', true, true, 'divert'],
    ['slow', false, false, 'recovered'],
    ['slow', true, false, 'recovered'],
    ['slow', false, true, 'go'],
    ['slow', true, true, 'go'],
  ] as const)('%s lane, at limit %s, slow %s → %s', (lane, atLimit, slow, want) => {
    expect(laneDecision(lane, atLimit, slow)).toBe(want);
  });

  it('paces the slow lane at limit / latency, within [1, max] per second', () => {
    expect(slowLanePace(20, 2000, 200)).toBe(10);
    expect(slowLanePace(1, 30_000, 200)).toBe(1);
    expect(slowLanePace(1000, 1500, 200)).toBe(200);
    expect(slowLanePace(5, 0, 200)).toBe(200);
  });
});

describe('latency percentiles', () => {
  it('takes p50 and p90 by nearest rank over the window only', () => {
    const now = 1_000_000;
    const samples = [...Array.from({ length: 10 }, (_, i) => ({ at: now - 100, ms: (i + 1) * 10 })), { at: now - 60_000, ms: 99_999 }];
    expect(percentiles(samples, now, 30_000)).toEqual({ p50: 50, p90: 90, samples: 10 });
    expect(percentiles([], now, 30_000)).toEqual({ p50: null, p90: null, samples: 0 });
  });
});
