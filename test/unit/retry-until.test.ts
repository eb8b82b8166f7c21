import { describe, expect, it } from 'vitest';
import { retryDelay, retryUntil } from '../../core/domain/retry-until';

// The one retry loop (core/domain/retry-until.ts): its waits, its cap, its jitter and how it stops.

const failing = (n: number) => {
  let calls = 0;
  return async () => {
    if (++calls <= n) throw new Error(`failure ${calls}`);
    return calls;
  };
};

describe('retryUntil', () => {
  it('doubles its wait from the base up to the cap, then returns what the call gave', async () => {
    const waits: number[] = [];
    const got = await retryUntil(failing(6), { baseMs: 100, capMs: 1000, sleep: async (ms) => void waits.push(ms) });
    expect(got).toBe(7);
    expect(waits).toEqual([100, 200, 400, 800, 1000, 1000]);
  });

  it('spreads each wait by ±jitter', () => {
    const o = { baseMs: 1000, capMs: 1000, jitter: 0.2 };
    expect([0, 0.5, 0.999999].map((r) => retryDelay(0, o, r))).toEqual([800, 1000, 1200]);
  });

  it('tells onRetry of each failure it will retry, with the wait', async () => {
    const seen: string[] = [];
    await retryUntil(failing(2), { baseMs: 1, capMs: 2, sleep: async () => {}, onRetry: (e, ms, n) => seen.push(`${(e as Error).message} ${ms} ${n}`) });
    expect(seen).toEqual(['failure 1 1 0', 'failure 2 2 1']);
  });

  it('gives up with the last error when retryIf refuses another try', async () => {
    await expect(retryUntil(failing(5), { baseMs: 1, capMs: 1, sleep: async () => {}, retryIf: (_e, _ms, n) => n < 2 })).rejects.toThrow('failure 3');
  });

  it('stops waiting at once when aborted, with the last error', async () => {
    const ctl = new AbortController();
    const t0 = Date.now();
    const run = retryUntil(failing(100), { baseMs: 60_000, capMs: 60_000, signal: ctl.signal });
    setTimeout(() => ctl.abort(), 20);
    await expect(run).rejects.toThrow('failure 1');
    expect(Date.now() - t0).toBeLessThan(5000);
  });

  it('does not call again once aborted', async () => {
    const ctl = new AbortController();
    ctl.abort();
    let calls = 0;
    const fn = async () => {
      calls++;
      throw new Error('down');
    };
    await expect(retryUntil(fn, { baseMs: 1, capMs: 1, signal: ctl.signal })).rejects.toThrow('down');
    expect(calls).toBe(1);
  });
});
