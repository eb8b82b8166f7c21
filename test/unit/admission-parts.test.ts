import { describe, expect, it } from 'vitest';
import { createOriginSlots } from '../../core/pipeline/origin-slots';
import { createEndpointPacer } from '../../core/pipeline/pacer';
import { createAdmission } from '../../core/pipeline/admission';
import { coalesce, coalesceSends } from '../../core/pipeline/coalesce';
import { loadConfig } from '../../core/config/load';
import { systemClock } from '../../core/ports/clock';
import { silentLogger } from '../../core/ports/logger';
import type { Admission, Guards } from '../../core/ports/guards';
import { hook } from '../helpers/reconcile-fixtures';

// The named parts of admission (core/pipeline/origin-slots.ts, pacer.ts) on their own.

const tick = () => new Promise((r) => setTimeout(r, 0));

describe('origin slots: the worker never admits more to an origin than its pool sends at once', () => {
  it('queues the one past the slots, in arrival order, and hands a freed slot to the first waiter', async () => {
    const slots = createOriginSlots(64, 2);
    const a = await slots.acquire('http://a');
    await slots.acquire('http://a');
    const order: string[] = [];
    void slots.acquire('http://a').then(() => order.push('third'));
    void slots.acquire('http://a').then(() => order.push('fourth'));
    // Another origin is not held up.
    await slots.acquire('http://b');
    await tick();
    expect(order).toEqual([]);
    expect(slots.stats('http://a')).toEqual({ size: 2, active: 2, waiting: 2 });
    a();
    a(); // a release given twice counts once
    await tick();
    expect(order).toEqual(['third']);
  });

  it('follows the limit admission reports, up to the pool size, at least one', async () => {
    const slots = createOriginSlots(4, 1);
    const first = await slots.acquire('http://a');
    const waiting = [slots.acquire('http://a'), slots.acquire('http://a'), slots.acquire('http://a'), slots.acquire('http://a')];
    slots.resize('http://a', 37.6);
    await Promise.all(waiting.slice(0, 3));
    expect(slots.stats('http://a')).toEqual({ size: 4, active: 4, waiting: 1 });
    slots.resize('http://a', 0);
    expect(slots.stats('http://a').size).toBe(1);
    first();
    (await waiting[0]!)();
    expect(slots.stats('http://a')).toMatchObject({ active: 2, waiting: 1 });
  });
  it('take() gives a free slot at once, never one past the slots nor ahead of a waiter', async () => {
    const slots = createOriginSlots(64, 1);
    const first = slots.take('http://a');
    expect(first).toBeTypeOf('function');
    expect(slots.take('http://a')).toBeUndefined();
    const waiting = slots.acquire('http://a');
    first!();
    // The freed slot went to the waiter: a newcomer taking at once does not slip in.
    expect(slots.take('http://a')).toBeUndefined();
    (await waiting)();
    expect(slots.stats('http://a')).toMatchObject({ active: 0, waiting: 0 });
    expect(slots.take('http://a')).toBeTypeOf('function');
  });
});

describe('slow-lane pacer: each endpoint at limit / latency (fake clock)', () => {
  it('spaces an endpoint by latency / limit, other endpoints apart, and lets an unknown one through', async () => {
    let now = 1_000_000;
    const waits: number[] = [];
    const pacer = createEndpointPacer(200, { now: () => now }, async (ms) => void waits.push(ms));
    await pacer.pace('unknown');
    expect(waits).toEqual([]);
    pacer.learn('ep', 4, 2000); // 2 per second
    expect(pacer.rate('ep')).toBe(2);
    await pacer.pace('ep');
    await pacer.pace('ep');
    await pacer.pace('ep');
    expect(waits).toEqual([500, 1000]);
    now += 1000;
    await pacer.pace('ep');
    expect(waits).toEqual([500, 1000, 500]);
    // At most the configured rate, at least one per second.
    pacer.learn('fast', 1000, 1);
    expect(pacer.rate('fast')).toBe(200);
    pacer.learn('stuck', 1, 30_000);
    expect(pacer.rate('stuck')).toBe(1);
  });
});

describe("an origin's pool follows the largest limit among its endpoints", () => {
  it('grows with the largest, and shrinks to the next one when the largest lowers its limit', async () => {
    const limit = new Map<string, number>();
    const guards = {
      admit: async (reqs: { endpointHash: string }[]) =>
        reqs.map((r): Admission => ({
          kind: 'go',
          probe: false,
          counted: { endpoint: false, domain: false },
          seen: { fastLimit: 64, limit: limit.get(r.endpointHash)!, latencyMs: 1 },
        })),
      complete: async () => [],
      renew: async () => {},
    } as unknown as Guards;
    const slots = createOriginSlots(64, 1);
    const admission = createAdmission({ config: loadConfig({ env: {} }), clock: systemClock, log: silentLogger, guards, slots });
    const w = (hash: string) => hook(`wh_${hash}`, { endpoint: `http://127.0.0.1:9/${hash}`, endpoint_hash: hash.padEnd(32, '0') });
    // Read while the admission holds its slot: an idle origin's pool is forgotten (not its limits).
    const sizeAfter = async (hash: string, l: number) => {
      limit.set(hash.padEnd(32, '0'), l);
      const got = await admission.admit(w(hash), 'fast');
      const size = slots.stats('http://127.0.0.1:9').size;
      got.release();
      return size;
    };
    expect(await sizeAfter('a', 10)).toBe(10);
    expect(await sizeAfter('b', 30)).toBe(30);
    expect(await sizeAfter('a', 12)).toBe(30);
    expect(await sizeAfter('b', 5)).toBe(12);
    expect(await sizeAfter('a', 3)).toBe(5);
    expect(await sizeAfter('c', 100)).toBe(64);
  });
});

describe('coalesceSends: fire-and-forget calls batched like coalesce, one promise per call', () => {
  it('sends the calls of a tick at once, those made meanwhile in the next call, and reports each call settled', async () => {
    const calls: number[][] = [];
    const settled: [number[], boolean][] = [];
    let fail = false;
    let finish: () => void = () => {};
    const send = coalesceSends(
      (items: number[]) => {
        calls.push(items);
        return new Promise<void>((resolve, reject) => (finish = () => (fail ? reject(new Error('down')) : resolve())));
      },
      (items, failed) => settled.push([items, failed]),
    );
    send.add(1);
    send.add(2);
    await tick();
    send.add(3); // while the first call is out
    send.add(4);
    let idle = false;
    void send.idle().then(() => (idle = true));
    await tick();
    expect(calls).toEqual([[1, 2]]);
    finish();
    await tick();
    expect(settled).toEqual([[[1, 2], false]]);
    expect(calls).toEqual([
      [1, 2],
      [3, 4],
    ]);
    expect(idle).toBe(false);
    fail = true;
    finish();
    await tick();
    expect(settled).toEqual([
      [[1, 2], false],
      [[3, 4], true],
    ]);
    expect(idle).toBe(true);
  });
});

describe('coalesce: calls answered from one batch call each', () => {
  it("gives each call its own result, shares a call among a tick's calls and those made while one is out, and fails only that call's items", async () => {
    const calls: number[][] = [];
    const finishers: ((fail: boolean) => void)[] = [];
    const ask = coalesce((items: number[]) => {
      calls.push(items);
      return new Promise<string[]>((resolve, reject) => finishers.push((fail) => (fail ? reject(new Error('down')) : resolve(items.map((i) => `r${i}`)))));
    });
    const a = ask(1);
    const b = ask(2);
    await tick();
    const c = ask(3); // while the first call is out
    const d = ask(4);
    await tick();
    expect(calls).toEqual([[1, 2]]);
    finishers[0]!(false);
    expect(await Promise.all([a, b])).toEqual(['r1', 'r2']);
    await tick();
    expect(calls).toEqual([
      [1, 2],
      [3, 4],
    ]);
    finishers[1]!(true);
    await expect(c).rejects.toThrow('down');
    await expect(d).rejects.toThrow('down');
    const e = ask(5);
    await tick();
    finishers[2]!(false);
    expect(await e).toBe('r5');
  });
});
