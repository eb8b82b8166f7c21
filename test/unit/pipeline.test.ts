import { afterEach, describe, expect, it, vi } from 'vitest';
import { batchingProducer } from '../../core/pipeline/batching-producer';
import { semaphore } from '../../core/pipeline/limiter';
import type { LogProducer, LogRecord } from '../../core/ports/log';

const rec = (value: string, topic = 't'): LogRecord => ({ topic, key: 'k', value });

/** An inner producer whose sends the test settles by hand. */
const fakeInner = () => {
  const calls: { records: LogRecord[]; resolve: () => void; reject: (e: unknown) => void }[] = [];
  let closed = 0;
  const inner: LogProducer = {
    send: (records) => new Promise<void>((resolve, reject) => calls.push({ records, resolve, reject })),
    close: async () => {
      closed++;
    },
  };
  return { inner, calls, closed: () => closed };
};

/** Tracks whether a promise has settled, and how. */
const track = (p: Promise<unknown>) => {
  const s = { state: 'pending' as 'pending' | 'resolved' | 'rejected', error: undefined as unknown };
  p.then(
    () => (s.state = 'resolved'),
    (e) => {
      s.state = 'rejected';
      s.error = e;
    },
  );
  return s;
};

const flushMicrotasks = async () => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

describe('batchingProducer', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('turns concurrent sends within the linger into one inner send, in call order', async () => {
    vi.useFakeTimers();
    const { inner, calls } = fakeInner();
    const p = batchingProducer(inner, 10);
    const sends = [p.send([rec('a'), rec('b')]), p.send([rec('c')]), p.send([rec('d', 'other')])].map(track);
    await vi.advanceTimersByTimeAsync(9);
    expect(calls).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.records.map((r) => r.value)).toEqual(['a', 'b', 'c', 'd']);
    // Nobody hears back before the inner send is acknowledged.
    await flushMicrotasks();
    expect(sends.map((s) => s.state)).toEqual(['pending', 'pending', 'pending']);
    calls[0]!.resolve();
    await flushMicrotasks();
    expect(sends.map((s) => s.state)).toEqual(['resolved', 'resolved', 'resolved']);
  });

  it('a failed inner send rejects every caller of that flush and no other', async () => {
    vi.useFakeTimers();
    const { inner, calls } = fakeInner();
    const p = batchingProducer(inner, 5);
    const first = [p.send([rec('a')]), p.send([rec('b')])].map(track);
    await vi.advanceTimersByTimeAsync(5);
    const second = [p.send([rec('c')])].map(track);
    await vi.advanceTimersByTimeAsync(5);
    expect(calls).toHaveLength(2);
    const boom = new Error('broker down');
    calls[0]!.reject(boom);
    calls[1]!.resolve();
    await flushMicrotasks();
    expect(first.map((s) => s.state)).toEqual(['rejected', 'rejected']);
    expect(first.every((s) => s.error === boom)).toBe(true);
    expect(second[0]!.state).toBe('resolved');
  });

  it('sends separated by more than the linger go in separate inner sends', async () => {
    vi.useFakeTimers();
    const { inner, calls } = fakeInner();
    const p = batchingProducer(inner, 5);
    void p.send([rec('a')]);
    await vi.advanceTimersByTimeAsync(6);
    void p.send([rec('b')]);
    await vi.advanceTimersByTimeAsync(6);
    expect(calls.map((c) => c.records.map((r) => r.value))).toEqual([['a'], ['b']]);
  });

  it('flushes at once when maxRecords is reached, without waiting for the linger', async () => {
    vi.useFakeTimers();
    const { inner, calls } = fakeInner();
    const p = batchingProducer(inner, 1000, 3);
    void p.send([rec('a'), rec('b')]);
    expect(calls).toHaveLength(0);
    void p.send([rec('c')]);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.records).toHaveLength(3);
    void p.send([rec('d')]);
    await vi.advanceTimersByTimeAsync(1000);
    expect(calls.map((c) => c.records.length)).toEqual([3, 1]);
  });

  it('with linger 0 every send goes straight through', () => {
    const { inner, calls } = fakeInner();
    const p = batchingProducer(inner, 0);
    void p.send([rec('a')]);
    void p.send([rec('b')]);
    expect(calls.map((c) => c.records.map((r) => r.value))).toEqual([['a'], ['b']]);
  });

  it('an empty send resolves without an inner send', async () => {
    vi.useFakeTimers();
    const { inner, calls } = fakeInner();
    const p = batchingProducer(inner, 5);
    await p.send([]);
    await vi.advanceTimersByTimeAsync(10);
    expect(calls).toHaveLength(0);
  });

  it('close flushes what is buffered and closes the inner producer', async () => {
    vi.useFakeTimers();
    const { inner, calls, closed } = fakeInner();
    const p = batchingProducer(inner, 10_000);
    const s = track(p.send([rec('a')]));
    const closing = p.close();
    await flushMicrotasks();
    // The buffered record went out at once, and the inner producer stays open until it is acknowledged.
    expect(calls).toHaveLength(1);
    expect(closed()).toBe(0);
    calls[0]!.resolve();
    await closing;
    expect(closed()).toBe(1);
    expect(s.state).toBe('resolved');
  });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('semaphore', () => {
  it('never runs more than max at once, and reaches max', async () => {
    const gate = semaphore(3);
    let active = 0;
    let peak = 0;
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        gate(async () => {
          active++;
          peak = Math.max(peak, active);
          await sleep(Math.floor(Math.random() * 5));
          active--;
          return i * 2;
        }),
      ),
    );
    expect(peak).toBe(3);
    expect(results).toEqual(Array.from({ length: 40 }, (_, i) => i * 2));
  });

  it('gives the slot back when a task throws', async () => {
    const gate = semaphore(1);
    await expect(
      gate(async () => {
        throw new Error('task failed');
      }),
    ).rejects.toThrow('task failed');
    await expect(Promise.race([gate(async () => 'ran'), sleep(1000).then(() => 'stuck')])).resolves.toBe('ran');
  });

  it('lets waiting tasks in as slots free up, first come first served', async () => {
    const gate = semaphore(1);
    const order: number[] = [];
    await Promise.all(
      [1, 2, 3, 4].map((n) =>
        gate(async () => {
          order.push(n);
          await sleep(1);
        }),
      ),
    );
    expect(order).toEqual([1, 2, 3, 4]);
  });
  it('take() gets a free slot at once and none when full; a released slot goes to those waiting, in order', async () => {
    const gate = semaphore(1);
    expect(gate.take()).toBe(true);
    expect(gate.take()).toBe(false);
    const order: string[] = [];
    const waiting = gate.wait().then(() => void order.push('waiter'));
    const queued = gate(async () => void order.push('task'));
    gate.release();
    await waiting;
    expect(order).toEqual(['waiter']);
    expect(gate.take()).toBe(false); // the slot passed to the waiter; the task still waits behind it
    gate.release();
    await queued;
    expect(order).toEqual(['waiter', 'task']);
    expect(gate.take()).toBe(true);
  });
});
