import { describe, expect, it } from 'vitest';
import { createBatcher } from '../../core/domain/batcher';

const deferred = <T>() => {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
};
const tick = () => new Promise((r) => setTimeout(r, 0));

describe('the one batcher', () => {
  it('items added in one tick leave in one call after the microtasks; each caller gets its place', async () => {
    const calls: number[][] = [];
    const b = createBatcher<number, number[]>({ start: 'microtask', run: async (xs) => (calls.push(xs), xs.map((x) => x * 10)) });
    const got = await Promise.all([1, 2, 3].map((x) => b.add(x).then(({ result, index }) => result[index])));
    expect(got).toEqual([10, 20, 30]);
    expect(calls).toEqual([[1, 2, 3]]);
  });

  it('items added while a call is out wait for it, then leave together', async () => {
    const calls: number[][] = [];
    const out: ReturnType<typeof deferred<void>>[] = [];
    const b = createBatcher<number, void>({ start: 'macrotask', run: (xs) => (calls.push(xs), out.push(deferred<void>()), out.at(-1)!.promise) });
    const first = b.add(1);
    await tick();
    const later = [b.add(2), b.add(3), b.add(4)];
    await tick();
    expect(calls).toEqual([[1]]);
    out[0]!.resolve();
    await first;
    expect(calls).toEqual([[1], [2, 3, 4]]);
    out[1]!.resolve();
    await Promise.all(later);
  });

  it('a call carries at most maxWeight (a heavier item alone), the rest waits for its turn', async () => {
    const calls: string[][] = [];
    const b = createBatcher<string, void>({ start: 'microtask', maxWeight: 5, weight: (s) => s.length, run: async (xs) => void calls.push(xs) });
    await Promise.all([b.add('ab'), b.add('cd'), b.add('efghij'), b.add('k')]);
    expect(calls).toEqual([['ab', 'cd'], ['efghij'], ['k']]);
  });

  it('once fullAt waits, everything waiting leaves in one call without waiting for the linger', async () => {
    const calls: string[][] = [];
    const b = createBatcher<string, void>({
      start: { lingerMs: 60_000 },
      maxInFlight: Infinity,
      fullAt: 5,
      weight: (s) => s.length,
      run: async (xs) => void calls.push(xs),
    });
    const p = [b.add('ab'), b.add('cd'), b.add('efghij'), b.add('k')];
    expect(calls).toEqual([['ab', 'cd', 'efghij']]);
    expect(b.waiting).toBe(1);
    b.flush();
    await Promise.all(p);
    expect(calls.at(-1)).toEqual(['k']);
  });

  it('at the in-flight cap it asks its owner (whenBusy), whose flush sends whatever is out', async () => {
    let armed = 0;
    const out = deferred<number>();
    const b = createBatcher<string[], number>({
      start: 'microtask',
      maxInFlight: 0,
      whenBusy: () => armed++,
      weight: (r) => r.length,
      run: () => out.promise,
    });
    const a = b.add(['x', 'y']);
    const c = b.add(['z']);
    expect(armed).toBe(2);
    b.flush();
    out.resolve(7);
    expect(await a).toMatchObject({ result: 7, index: 0, offset: 0 });
    expect(await c).toMatchObject({ result: 7, index: 1, offset: 2 });
  });

  it('a failed call fails every caller that shared it, and the next call goes on', async () => {
    let n = 0;
    const b = createBatcher<number, number>({ start: 'microtask', run: async () => (n++ === 0 ? Promise.reject(new Error('broker down')) : n) });
    const failed = [b.add(1), b.add(2)];
    await expect(Promise.all(failed)).rejects.toThrow('broker down');
    await expect(failed[1]).rejects.toThrow('broker down');
    expect((await b.add(3)).result).toBe(2);
  });

  it('a run that throws at once fails its callers instead of the adder', async () => {
    const b = createBatcher<number, void>({
      start: 'now',
      run: () => {
        throw new Error('bad');
      },
    });
    await expect(b.add(1)).rejects.toThrow('bad');
  });

  it('withdraw takes back an item that has not left; idle waits for the queue and the calls out', async () => {
    const calls: number[][] = [];
    const out = deferred<void>();
    const b = createBatcher<number, void>({ start: { lingerMs: 20 }, run: (xs) => (calls.push(xs), out.promise) });
    void b.add(1);
    void b.add(2);
    expect(b.withdraw(1)).toBe(true);
    let idle = false;
    void b.idle().then(() => (idle = true));
    await new Promise((r) => setTimeout(r, 40));
    expect(calls).toEqual([[2]]);
    expect(b.withdraw(2)).toBe(false);
    expect(idle).toBe(false);
    out.resolve();
    await b.idle();
    expect(idle).toBe(true);
  });
});
