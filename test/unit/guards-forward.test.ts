import { describe, expect, it } from 'vitest';
import { forwardGuards, type Guards } from '../../core/ports/guards';

// The base of the guards wrappers (metrics, journal): every call reaches the inner guards
// with its arguments, and its answer comes back as the inner guards gave it.

describe('forwardGuards', () => {
  it('passes every call and its arguments to the inner guards and returns their answers', async () => {
    const calls: [string, unknown[]][] = [];
    const inner = new Proxy({} as Guards, {
      get:
        (_, name: string) =>
        async (...args: unknown[]) => {
          calls.push([name, args]);
          return `${name}-answer`;
        },
    });
    const g = forwardGuards(inner);
    const methods = Object.keys(g).sort();
    expect(methods).toEqual(
      [
        'admit',
        'complete',
        'dropHeld',
        'endpoint',
        'holdPaused',
        'pause',
        'peekHeld',
        'renew',
        'resetCircuit',
        'restoreCircuits',
        'restoreHeld',
        'restorePauses',
        'resume',
        'takeHeld',
        'takeToken',
      ].sort(),
    );
    for (const m of methods) {
      const args = [`${m}-1`, `${m}-2`, `${m}-3`, `${m}-4`, `${m}-5`];
      const f = g[m as keyof Guards] as (...a: unknown[]) => Promise<unknown>;
      expect(await f(...args.slice(0, f.length))).toBe(`${m}-answer`);
      expect(calls.pop()).toEqual([m, args.slice(0, f.length)]);
    }
    expect(calls).toEqual([]);
  });
});
