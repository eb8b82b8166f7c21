import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config/load';
import { batchingProducer } from '../../core/pipeline/batching-producer';
import { createEnqueuer, MAX_UNANSWERED_WAITING } from '../../core/pipeline/enqueue';
import { readingOwnWrites } from '../../core/pipeline/pending-writes';
import type { HotBatch } from '../../core/ports/hot-state';
import type { LogProducer, LogRecord } from '../../core/ports/log';
import { silentLogger } from '../../core/ports/logger';
import { recordingHotState } from '../helpers/recording-hot-state';

// At a light load each enqueue comes alone: what it pays must be its own work, not a timer's
// wait, and its 'pending' status must not cost a Redis round trip of its own.

const config = loadConfig({ env: {} });
const rec = (value: string): LogRecord => ({ topic: 't', key: 'k', value });
const nextTurn = () => new Promise<void>((r) => setImmediate(r));

/** Like KafkaLog's producer: the sends of one tick make one request; a request with a record 'big' is refused and each send retried alone. */
const tickMergingInner = () => {
  const requests: string[][] = [];
  let waiting: { records: LogRecord[]; resolve: () => void; reject: (e: unknown) => void }[] = [];
  const refuses = (rs: LogRecord[]) => rs.some((r) => r.value === 'big');
  const inner: LogProducer = {
    send: (records) =>
      new Promise<void>((resolve, reject) => {
        if (!waiting.length)
          queueMicrotask(() => {
            const taken = waiting;
            waiting = [];
            requests.push(taken.flatMap((t) => t.records.map((r) => r.value!)));
            if (!refuses(taken.flatMap((t) => t.records))) return taken.forEach((t) => t.resolve());
            for (const t of taken) {
              if (refuses(t.records)) t.reject(new Error('record too large'));
              else t.resolve();
            }
          });
        waiting.push({ records, resolve, reject });
      }),
    close: async () => {},
    mergesTick: true,
  };
  return { inner, requests };
};

describe('the api producer without a linger (the default)', () => {
  it('sends a lone enqueue in the turn it came, with no timer to wait for', async () => {
    const { inner, requests } = tickMergingInner();
    const p = batchingProducer(inner, config.api.produce_linger, undefined, setImmediate);
    const sent = p.send([rec('a')]);
    await nextTurn();
    expect(requests).toEqual([['a']]);
    await sent;
  });

  it('makes the enqueues read in one turn (separate callbacks) one request', async () => {
    const { inner, requests } = tickMergingInner();
    const p = batchingProducer(inner, config.api.produce_linger, undefined, setImmediate);
    // Two timer callbacks of the same turn stand for two requests read from two sockets.
    const sends = await new Promise<Promise<void>[]>((resolve) => {
      const out: Promise<void>[] = [];
      setTimeout(() => out.push(p.send([rec('a')])), 0);
      setTimeout(() => resolve([...out, p.send([rec('b'), rec('c')])]), 0);
    });
    await Promise.all(sends);
    expect(requests).toEqual([['a', 'b', 'c']]);
  });

  it('fails only the enqueue whose records the broker refused, not those that shared its request', async () => {
    const { inner, requests } = tickMergingInner();
    const p = batchingProducer(inner, config.api.produce_linger, undefined, setImmediate);
    const results = await Promise.allSettled([p.send([rec('a')]), p.send([rec('big')]), p.send([rec('b')])]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(requests[0]).toEqual(['a', 'big', 'b']);
  });

  it('gives a producer that does not merge the sends of a tick one send for the turn (one SQLite transaction)', async () => {
    const calls: string[][] = [];
    const inner: LogProducer = { send: async (rs) => void calls.push(rs.map((r) => r.value!)), close: async () => {} };
    const p = batchingProducer(inner, config.api.produce_linger, undefined, setImmediate);
    await Promise.all([p.send([rec('a')]), p.send([rec('b')])]);
    expect(calls).toEqual([['a', 'b']]);
  });
});

describe("the 'pending' statuses with api.status_linger", () => {
  const setup = (statusLingerMs: number) => {
    const clock = { now: () => Date.now() };
    const { hot, applied } = recordingHotState(clock);
    const producer: LogProducer = { send: async () => {}, close: async () => {} };
    const enqueue = createEnqueuer({ config, clock, log: silentLogger, hot, producer, statusLingerMs });
    return { enqueue, applied, hot };
  };
  const item = (n: number) => [{ endpoint: 'https://example.com/h', payload: `{"n":${n}}`, headers: {} }];

  it('answers before the status is written, and gathers the statuses of the linger into one write', async () => {
    expect(config.api.status_linger).toBeGreaterThan(0);
    const { enqueue, applied } = setup(config.api.status_linger);
    const ids: string[] = [];
    for (let n = 0; n < 5; n++) ids.push((await enqueue('cfg', item(n)))[0]!.webhook_id);
    expect(applied).toHaveLength(0);
    await new Promise((r) => setTimeout(r, config.api.status_linger + 20));
    expect(applied).toHaveLength(1);
    expect(applied[0]!.statuses!.map((s) => s.status.webhook_id)).toEqual(ids);
    expect(applied[0]!.stats!.counts).toEqual({ enqueued: 5 });
  });

  it("this instance's reads write what waits first: a status is there as soon as its enqueue answered", async () => {
    const { enqueue, applied, hot } = setup(60_000);
    const [r] = await enqueue('cfg', item(1));
    const reads = readingOwnWrites(hot, enqueue.settle, ['getStatus']);
    expect(await hot.getStatus(r!.webhook_id)).toBeNull();
    expect((await reads.getStatus(r!.webhook_id))?.state).toBe('pending');
    expect(applied).toHaveLength(1);
    // Other methods are the target's own, bound to it.
    expect(await reads.retryCount()).toBe(0);
  });

  it('answers without the status write only while the statuses waiting for a stalled Redis stay under the bound', async () => {
    const { enqueue, hot } = setup(1);
    const stalled: (() => void)[] = [];
    const apply = hot.apply.bind(hot);
    hot.apply = (b: HotBatch) => new Promise<void>((resolve) => stalled.push(() => void apply(b).then(resolve)));
    await enqueue('cfg', item(0));
    await new Promise((r) => setTimeout(r, 20));
    expect(stalled).toHaveLength(1);
    // The first write is out and stuck: what comes now waits for it, past the bound with its answer too.
    const many = Array.from({ length: MAX_UNANSWERED_WAITING + 1 }, (_, n) => item(n)[0]!);
    let answered = false;
    const big = enqueue('cfg', many).then(() => (answered = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(answered).toBe(false);
    stalled.shift()!();
    await new Promise((r) => setTimeout(r, 20));
    stalled.shift()?.();
    await big;
    expect(answered).toBe(true);
  });

  it('with 0 writes each status before the enqueue answers, as before', async () => {
    const { enqueue, applied } = setup(0);
    await enqueue('cfg', item(1));
    expect(applied).toHaveLength(1);
  });
});
