import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BatchHandler, ConsumedBatch, ConsumedRecord, LogConsumer } from '../../core/ports/log';
import { range, sleep, waitUntil } from '../helpers/poll';
import type { LogHarness } from './log.contract';

// Pipelined consumption (core/ports/log.ts, BatchHandler): a partition's next batch starts
// while earlier ones run; offsets commit in offset order only; a rejected batch rewinds its
// partition; a bound on records in flight; a graceful stop; a revoked partition's batches
// commit nothing. Run against every adapter with log.contract.ts.

const TEST_TIMEOUT = 45_000;
const offsets = (rs: ConsumedRecord[]) => rs.map((r) => Number(r.offset));

type Gate = { open: () => void; fail: (e: Error) => void; promise: Promise<void> };
const gate = (): Gate => {
  let open!: () => void;
  let fail!: (e: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    open = res;
    fail = rej;
  });
  promise.catch(() => {});
  return { open, fail, promise };
};

export const logPipelineContract = (name: string, make: () => Promise<LogHarness>): void => {
  describe(`Log contract (pipelined batches): ${name}`, () => {
    let h: LogHarness;
    const consumers: LogConsumer[] = [];
    const consumer = (groupId: string, topics: string[], maxUnresolved?: number) => {
      const c = h.log.consumer({ groupId, topics, maxUnresolved });
      consumers.push(c);
      return c;
    };

    beforeEach(async () => {
      h = await make();
    });

    afterEach(async () => {
      await Promise.allSettled(consumers.splice(0).map((c) => c.stop()));
      await h.cleanup();
    });

    /** What a new member of `group` reads after `marker` is appended: nothing committed is read again. */
    const readAfter = async (group: string, t: string, markers: { key: string; value: string }[]): Promise<string[]> => {
      const got: string[] = [];
      await consumer(group, [t]).run(async (b) => {
        got.push(...b.records.map((r) => r.value ?? '<null>'));
      });
      const p = h.log.producer();
      await p.send(markers.map((m) => ({ topic: t, ...m })));
      await p.close();
      await waitUntil(
        'the markers',
        () => markers.every((m) => got.includes(m.value)),
        () => got,
      );
      await sleep(300); // anything older would have come first
      return got;
    };

    /** Waits until offset 9 reaches the handler in one of the calls from the `from`th on. */
    const until9 = (calls: ConsumedBatch[], what: string, from = 0) =>
      waitUntil(
        what,
        () => calls.slice(from).some((b) => b.records.some((r) => r.offset === '9')),
        () => calls.map((b) => offsets(b.records)),
      );

    /**
     * A topic of one partition, read by its own group: the first batch (offsets 0..4) blocks on
     * `first`; 5..9 are appended once it is running. Returns the topic, the group, the consumer,
     * the calls seen (each call's records) and the gate.
     */
    const twoBatches = async (name: string, onLater: BatchHandler = async () => {}, maxUnresolved?: number) => {
      const t = h.topic(name);
      const group = `${t}-g`;
      await h.log.admin.ensureTopics([{ name: t, partitions: 1 }]);
      const p = h.log.producer();
      await p.send(range(0, 5).map((i) => ({ topic: t, key: 'k', value: `v${i}` })));
      const first = gate();
      const calls: ConsumedBatch[] = [];
      const c = consumer(group, [t], maxUnresolved);
      await c.run(async (b) => {
        calls.push(b);
        if (calls.length === 1) return first.promise;
        return onLater(b);
      });
      await waitUntil('the first batch', () => calls.length === 1);
      expect(offsets(calls[0]!.records)).toEqual(range(0, 5));
      await p.send(range(5, 10).map((i) => ({ topic: t, key: 'k', value: `v${i}` })));
      await p.close();
      return { t, group, c, calls, first };
    };

    it(
      "starts a partition's next batch while the earlier one runs; the later one resolving first commits nothing",
      async () => {
        const { t, group, c, calls, first } = await twoBatches('pipe');
        // Offsets 5..9 reach the handler although the batch before them has not resolved.
        await until9(calls, 'offsets 5..9 while 0..4 still run', 1);
        await sleep(200); // the later batch has resolved by now
        const stopping = c.stop();
        await sleep(50);
        first.fail(new Error('stopped mid-batch'));
        await stopping;
        // Nothing was committed: 0..4 never resolved, so 5..9 could not commit either.
        const again = await readAfter(group, t, [{ key: 'k', value: 'marker' }]);
        expect(again).toEqual([...range(0, 10).map((i) => `v${i}`), 'marker']);
      },
      TEST_TIMEOUT,
    );

    it(
      'commits a later batch that resolved first once the earlier one resolves',
      async () => {
        const { t, group, c, calls, first } = await twoBatches('inorder');
        await until9(calls, 'offsets 5..9', 1);
        first.open();
        await sleep(300);
        await c.stop();
        expect(await readAfter(group, t, [{ key: 'k', value: 'marker' }])).toEqual(['marker']);
      },
      TEST_TIMEOUT,
    );

    it(
      "rewinds a partition to a rejected batch's first offset: later batches already handled come again, then commit",
      async () => {
        const { t, group, c, calls, first } = await twoBatches('rewind');
        await until9(calls, 'offsets 5..9', 1);
        const before = calls.length;
        first.fail(new Error('transient failure'));
        await until9(calls, '0..9 again', before);
        const again = calls.slice(before).flatMap((b) => offsets(b.records));
        // From the rejected batch's first record, every later record again, in order.
        expect(again).toEqual(range(0, 10));
        await sleep(300);
        await c.stop();
        expect(await readAfter(group, t, [{ key: 'k', value: 'marker' }])).toEqual(['marker']);
      },
      TEST_TIMEOUT,
    );

    it(
      'takes no new batch while maxUnresolved records are in flight',
      async () => {
        const { calls, first } = await twoBatches('bound', async () => {}, 1);
        await sleep(700); // 5..9 are there to take: a consumer without the bound takes them by now
        expect(calls).toHaveLength(1);
        first.open();
        await until9(calls, 'offsets 5..9 once room opened', 1);
      },
      TEST_TIMEOUT,
    );

    /**
     * One partition, offsets 0..4, a consumer with maxBatchesInFlight 1 whose first batch runs
     * until `first` opens (released at once when `release`). Returns the producer (still open),
     * the calls seen and the gate.
     */
    const heldFirstBatch = async (name: string, opts: { maxHoldMs?: number; release?: boolean } = {}) => {
      const t = h.topic(name);
      await h.log.admin.ensureTopics([{ name: t, partitions: 1 }]);
      const p = h.log.producer();
      await p.send(range(0, 5).map((i) => ({ topic: t, key: 'k', value: `v${i}` })));
      const first = gate();
      const calls: ConsumedBatch[] = [];
      const c = h.log.consumer({ groupId: `${t}-g`, topics: [t], maxBatchesInFlight: 1, maxHoldMs: opts.maxHoldMs });
      consumers.push(c);
      await c.run(async (b) => {
        calls.push(b);
        if (calls.length > 1) return;
        if (opts.release) b.release?.();
        await first.promise;
      });
      await waitUntil('the first batch', () => calls.length === 1);
      const append = (from: number, to: number) => p.send(range(from, to).map((i) => ({ topic: t, key: 'k', value: `v${i}` })));
      return { p, append, calls, first };
    };

    it(
      'with maxBatchesInFlight 1, fetches again only once the batch in flight settles, and then takes everything appended meanwhile',
      async () => {
        const { p, append, calls, first } = await heldFirstBatch('hold', { maxHoldMs: 60_000 });
        await append(5, 8);
        await append(8, 10);
        await p.close();
        await sleep(500); // unbounded, 5..9 would be taken by now (the test above)
        expect(calls.length).toBe(1);
        first.open();
        await until9(calls, 'offsets 5..9');
        // Both appends came in one batch: the held fetch gathered them.
        expect(calls.slice(1).map((b) => offsets(b.records))).toEqual([range(5, 10)]);
      },
      TEST_TIMEOUT,
    );

    it(
      'a hold lasts at most maxHoldMs: a batch that cannot finish does not stop the consumer fetching',
      async () => {
        const { p, append, calls, first } = await heldFirstBatch('holdmax', { maxHoldMs: 200 });
        await append(5, 10);
        await p.close();
        // The first batch never finishes here; 5..9 are taken once the hold has lasted 200 ms.
        await until9(calls, 'offsets 5..9 while 0..4 still run');
        first.open();
      },
      TEST_TIMEOUT,
    );

    it(
      'with maxBatchesInFlight 1, a batch its handler released no longer holds the next fetch',
      async () => {
        const { p, append, calls, first } = await heldFirstBatch('release', { release: true, maxHoldMs: 60_000 });
        await append(5, 10);
        await p.close();
        // The first batch still runs (not settled), but released: 5..9 are taken.
        await until9(calls, 'offsets 5..9 while 0..4 still run');
        first.open();
      },
      TEST_TIMEOUT,
    );

    it(
      'stops gracefully: batches in flight finish and their offsets are committed',
      async () => {
        const t = h.topic('graceful');
        const group = `${t}-g`;
        await h.log.admin.ensureTopics([{ name: t, partitions: 1 }]);
        const p = h.log.producer();
        await p.send(range(0, 5).map((i) => ({ topic: t, key: 'k', value: `v${i}` })));
        await p.close();
        let started = 0;
        let finished = 0;
        const c = consumer(group, [t]);
        await c.run(async () => {
          started++;
          await sleep(400);
          finished++;
        });
        await waitUntil('a batch in flight', () => started > 0);
        await c.stop();
        expect(finished).toBe(started);
        expect(await readAfter(group, t, [{ key: 'k', value: 'marker' }])).toEqual(['marker']);
      },
      TEST_TIMEOUT,
    );

    it(
      'a batch of a partition revoked by a rebalance does not commit over its new owner',
      async () => {
        const t = h.topic('revoke');
        const group = `${t}-g`;
        await h.log.admin.ensureTopics([{ name: t, partitions: 2 }]);
        const p = h.log.producer();
        await p.send(range(0, 20).map((i) => ({ topic: t, key: `k${i}`, value: `a${i}` })));

        // A takes a batch of each partition and holds both.
        const held = gate();
        const aSeen: ConsumedRecord[] = [];
        await consumer(group, [t]).run(async (b) => {
          aSeen.push(...b.records);
          await held.promise;
        });
        await waitUntil(
          'A holding both partitions',
          () => new Set(aSeen.map((r) => r.partition)).size === 2,
          () => aSeen.length,
        );
        const keyOn = (partition: number) => aSeen.find((r) => r.partition === partition)!.key!;

        // B joins: one partition (q) moves to it and is read from the last commit (nothing yet).
        const bSeen: ConsumedRecord[] = [];
        const b = consumer(group, [t]);
        await b.run(async (batch) => {
          bSeen.push(...batch.records);
        });
        await waitUntil('B owning a partition', () => bSeen.length > 0);
        const q = bSeen[0]!.partition;
        const qCount = aSeen.filter((r) => r.partition === q).length;
        // B moves q further than A's held batch reaches, and commits it.
        await p.send(range(0, 5).map((i) => ({ topic: t, key: keyOn(q), value: `b${i}` })));
        await waitUntil(
          "B past A's batch on q",
          () => bSeen.filter((r) => r.partition === q).length >= qCount + 5,
          () => offsets(bSeen),
        );
        expect(bSeen.every((r) => r.partition === q)).toBe(true);
        await sleep(300);

        // A's batches now resolve: the one of q must not move q's offset back.
        held.open();
        await sleep(500);
        // Neither does B read again what it handled (it would, from a commit moved back).
        expect(offsets(bSeen)).toEqual(range(0, qCount + 5));
        await Promise.all(consumers.splice(0).map((c) => c.stop()));

        const r = 1 - q;
        const got = await readAfter(group, t, [
          { key: keyOn(q), value: 'marker-q' },
          { key: keyOn(r), value: 'marker-r' },
        ]);
        expect([...got].sort()).toEqual(['marker-q', 'marker-r']);
        await p.close();
      },
      TEST_TIMEOUT,
    );
  });
};
