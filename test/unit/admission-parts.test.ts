import { describe, expect, it } from 'vitest';
import { createOriginSlots } from '../../core/pipeline/origin-slots';
import { createEndpointPacer } from '../../core/pipeline/pacer';

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
