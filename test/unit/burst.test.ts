import { describe, expect, it } from 'vitest';
import { burstAbsorption, worstDelayMs } from '../../core/policy/burst';

// Every expected value below is worked out by hand in the comment above it.
describe('burst absorption', () => {
  const base = { limit: 10, timeoutMs: 30_000, maxAttempts: 8, baseDelayMs: 10_000, maxDelayMs: 86_400_000, jitter: 0 };

  it('limit 10, timeout 30 s, 8 attempts, base 10 s: 430 webhooks', () => {
    // Delays after attempts 0..6: 10, 20, 40, 80, 160, 320, 640 s; their sum 1270 s.
    // Turns at 0, 30, 60, ... s: floor(1270 / 30) = 42, so 43 waves of 10 = 430.
    // Throughput 10 / 30 s = 0.333.../s; a burst of 1,000 needs 1000 / (1/3) = 3000 s and 570 dead-letter.
    const r = burstAbsorption(base, 1000);
    expect(r.delaysMs).toEqual([10_000, 20_000, 40_000, 80_000, 160_000, 320_000, 640_000]);
    expect(r.scheduleMs).toBe(1_270_000);
    expect(r.absorbable).toBe(430);
    expect(r.throughputPerSec).toBeCloseTo(1 / 3, 10);
    expect(r.burst).toEqual({ size: 1000, drainMs: 3_000_000, deadLetters: 570 });
  });

  it('a burst within the figure loses nothing', () => {
    expect(burstAbsorption(base, 430).burst!.deadLetters).toBe(0);
    expect(burstAbsorption(base, 431).burst!.deadLetters).toBe(1);
  });

  it('one attempt: only the first wave is served', () => {
    // No retry: the schedule is 0 s, one wave of 10.
    expect(burstAbsorption({ ...base, maxAttempts: 1 }).absorbable).toBe(10);
  });

  it('the cap and the jitter shorten the schedule (worst case)', () => {
    // base 10 s, cap 60 s, jitter 0.5, 5 attempts: raw 10, 20, 40, 80→60; × 0.5 = 5, 10, 20, 30 s = 65 s.
    // Limit 4, timeout 10 s: floor(65 / 10) = 6, 7 waves of 4 = 28.
    const r = burstAbsorption({ limit: 4, timeoutMs: 10_000, maxAttempts: 5, baseDelayMs: 10_000, maxDelayMs: 60_000, jitter: 0.5 });
    expect(r.delaysMs).toEqual([5_000, 10_000, 20_000, 30_000]);
    expect(r.absorbable).toBe(28);
  });

  it('the exponent stops at 10, as the scheduler does', () => {
    // 2^min(12, 10) = 1024: 1 s × 1024 = 1024 s.
    expect(worstDelayMs(12, { baseDelayMs: 1000, maxDelayMs: 1e9, jitter: 0 })).toBe(1_024_000);
  });

  it('the config defaults: limit 20, timeout 30 s, 20 attempts, base 10 s, cap 24 h, jitter 0.2', () => {
    // Delays k = 0..18: 10 × 2^k for k ≤ 10, then 10240 s. Sum for k = 0..10: 10 × (2^11 - 1) = 20470 s;
    // k = 11..18: 8 × 10240 = 81920 s; total 102390 s; × 0.8 = 81912 s.
    // floor(81912 / 30) = 2730, 2731 waves of 20 = 54620.
    const r = burstAbsorption({ limit: 20, timeoutMs: 30_000, maxAttempts: 20, baseDelayMs: 10_000, maxDelayMs: 86_400_000, jitter: 0.2 });
    expect(r.scheduleMs).toBeCloseTo(81_912_000, 3);
    expect(r.absorbable).toBe(54_620);
  });

  it('refuses a zero limit or timeout', () => {
    expect(() => burstAbsorption({ ...base, limit: 0 })).toThrow(RangeError);
    expect(() => burstAbsorption({ ...base, timeoutMs: 0 })).toThrow(RangeError);
  });
});
