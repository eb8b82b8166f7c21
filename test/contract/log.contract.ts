import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ConsumedBatch, ConsumedRecord, Log, LogConsumer, LogRecord } from '../../core/ports/log';
import { range, sleep, waitUntil } from '../helpers/poll';

// The observable semantics of the Log port (core/ports/log.ts), run against every adapter:
// memory (log.memory.test.ts) and Kafka (log.kafka.test.ts). Each test uses its own
// topics (`topic(base)` gives a fresh name) and its own consumer groups (derived from them).

export type LogHarness = {
  log: Log;
  /** A topic name no other test (or other run on a shared broker) uses. */
  topic: (base: string) => string;
  cleanup: () => Promise<void>;
};

const TEST_TIMEOUT = 30_000;
const WAIT = 20_000;
const big = (offset: string) => BigInt(offset);

export const logContract = (name: string, make: () => Promise<LogHarness>): void => {
  describe(`Log contract: ${name}`, () => {
    let h: LogHarness;
    const consumers: LogConsumer[] = [];
    const consumer = (groupId: string, topics: string[]) => {
      const c = h.log.consumer({ groupId, topics });
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

    it(
      'keeps the records of one key in order within one partition; batches are one partition in offset order',
      async () => {
        const t = h.topic('order');
        await h.log.admin.ensureTopics([{ name: t, partitions: 3 }]);
        const p = h.log.producer();
        const keys = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta'];
        const before = Date.now();
        for (let round = 0; round < 4; round++) {
          const recs: LogRecord[] = [];
          for (let i = 0; i < 5; i++) for (const k of keys) recs.push({ topic: t, key: k, value: `${k}:${round * 5 + i}` });
          await p.send(recs);
        }
        const after = Date.now();
        const batches: ConsumedBatch[] = [];
        const got: ConsumedRecord[] = [];
        await consumer(`${t}-g`, [t]).run(async (b) => {
          batches.push(b);
          got.push(...b.records);
        });
        await waitUntil(
          '120 records',
          () => got.length >= 120,
          () => got.length,
        );
        await sleep(200); // anything extra would arrive now

        expect(got).toHaveLength(120);
        for (const b of batches) {
          expect(b.topic).toBe(t);
          expect(b.records.length).toBeGreaterThan(0);
          b.records.forEach((r, i) => {
            expect(r.topic).toBe(t);
            expect(r.partition).toBe(b.partition);
            if (i > 0) expect(big(r.offset) > big(b.records[i - 1]!.offset)).toBe(true);
          });
        }
        for (const k of keys) {
          const mine = got.filter((r) => r.key === k);
          expect(new Set(mine.map((r) => r.partition)).size, `${k} stays on one partition`).toBe(1);
          expect(mine.map((r) => r.value)).toEqual(range(0, 20).map((i) => `${k}:${i}`));
        }
        expect(got.every((r) => r.partition >= 0 && r.partition < 3)).toBe(true);
        expect(got.every((r) => r.timestamp >= before - 5000 && r.timestamp <= after + 5000)).toBe(true);
        await p.close();
      },
      TEST_TIMEOUT,
    );

    it(
      'commits a batch only after its handler resolves: a consumer stopped mid-batch loses nothing',
      async () => {
        const t = h.topic('commit');
        const group = `${t}-g`;
        await h.log.admin.ensureTopics([{ name: t, partitions: 1 }]);
        const p = h.log.producer();
        await p.send(range(0, 10).map((i) => ({ topic: t, key: 'k', value: `v${i}` })));

        // Consumer 1 resolves every batch of offsets 0..9, then blocks inside the batch that
        // carries 10..19 (having "handled" part of it), is stopped, and that batch fails.
        let lastResolved = -1n;
        let inFlight: ConsumedRecord[] | undefined;
        let fail!: (e: Error) => void;
        const blocked = new Promise<void>((_, reject) => (fail = reject));
        blocked.catch(() => {});
        const c1 = consumer(group, [t]);
        await c1.run(async (b) => {
          if (b.records.some((r) => big(r.offset) >= 10n)) {
            inFlight = b.records;
            await blocked;
            return;
          }
          for (const r of b.records) if (big(r.offset) > lastResolved) lastResolved = big(r.offset);
        });
        await waitUntil(
          'consumer 1 to resolve offsets 0..9',
          () => lastResolved === 9n,
          () => String(lastResolved),
        );
        await p.send(range(10, 20).map((i) => ({ topic: t, key: 'k', value: `v${i}` })));
        await waitUntil('consumer 1 to be inside the second batch', () => inFlight !== undefined);
        expect(big(inFlight![0]!.offset)).toBe(10n);

        const stopping = c1.stop();
        await sleep(50);
        fail(new Error('stopped mid-batch'));
        await stopping;

        const seen: ConsumedRecord[] = [];
        await consumer(group, [t]).run(async (b) => {
          seen.push(...b.records);
        });
        await waitUntil(
          'consumer 2 to reach offset 19',
          () => seen.some((r) => r.offset === '19'),
          () => seen.map((r) => r.offset),
        );
        // Resumes right after the last resolved batch: 0..9 are not seen again, 10..19 all are.
        expect(seen[0]!.offset).toBe('10');
        expect(seen.map((r) => r.offset)).toEqual(range(10, 20).map(String));
        expect(seen.map((r) => r.value)).toEqual(range(10, 20).map((i) => `v${i}`));
        await p.close();
      },
      TEST_TIMEOUT,
    );

    it(
      'gives a handler that throws the same records again',
      async () => {
        const t = h.topic('redeliver');
        await h.log.admin.ensureTopics([{ name: t, partitions: 1 }]);
        const p = h.log.producer();
        await p.send(range(0, 5).map((i) => ({ topic: t, key: `k${i}`, value: `v${i}` })));
        const calls: string[][] = [];
        await consumer(`${t}-g`, [t]).run(async (b) => {
          calls.push(b.records.map((r) => `${r.offset}:${r.value}`));
          if (calls.length === 1) throw new Error('transient failure');
        });
        await waitUntil(
          'a redelivery covering every record',
          () => calls.slice(1).flat().includes('4:v4'),
          () => calls,
        );
        await sleep(300);
        const failed = calls[0]!;
        expect(failed[0]).toBe('0:v0');
        const again = calls.slice(1).flat();
        expect(again[0]).toBe(failed[0]); // from the first record of the failed batch
        expect(again).toEqual(expect.arrayContaining(failed));
        // Once handled, nothing comes a third time.
        expect(again).toEqual(range(0, 5).map((i) => `${i}:v${i}`));
        await p.close();
      },
      TEST_TIMEOUT,
    );

    it(
      'lets a second group read everything, independently of the first',
      async () => {
        const t = h.topic('groups');
        await h.log.admin.ensureTopics([{ name: t, partitions: 2 }]);
        const p = h.log.producer();
        await p.send(range(0, 12).map((i) => ({ topic: t, key: `key-${i}`, value: `v${i}` })));
        const values = range(0, 12).map((i) => `v${i}`);

        const readAll = async (groupId: string, n: number): Promise<{ c: LogConsumer; got: string[] }> => {
          const got: string[] = [];
          const c = consumer(groupId, [t]);
          await c.run(async (b) => {
            got.push(...b.records.map((r) => r.value ?? '<null>'));
          });
          await waitUntil(
            `${groupId} to read ${n} records`,
            () => got.length >= n,
            () => got,
          );
          return { c, got };
        };

        const a = await readAll(`${t}-a`, 12);
        await a.c.stop();
        const b = await readAll(`${t}-b`, 12);
        expect([...a.got].sort()).toEqual([...values].sort());
        expect([...b.got].sort()).toEqual([...values].sort());

        // Group a's position is its own: a new member of a sees only what came later.
        await p.send([{ topic: t, key: 'key-late', value: 'late' }]);
        await waitUntil(
          'group b to see the late record',
          () => b.got.includes('late'),
          () => b.got,
        );
        const a2 = await readAll(`${t}-a`, 1);
        await sleep(300);
        expect(a2.got).toEqual(['late']);
        await p.close();
      },
      TEST_TIMEOUT,
    );

    it(
      'delivers tombstones as null, distinct from an empty value, and keyless records with a null key',
      async () => {
        const t = h.topic('tombstone');
        const plain = h.topic('keyless'); // Kafka refuses keyless records on compacted topics
        await h.log.admin.ensureTopics([
          { name: t, partitions: 1, compacted: true },
          { name: plain, partitions: 1 },
        ]);
        const p = h.log.producer();
        await p.send([
          { topic: t, key: 'a', value: '{"x":1}' },
          { topic: t, key: 'a', value: null },
          { topic: t, key: 'b', value: '' },
          { topic: plain, key: null, value: 'keyless' },
          { topic: plain, key: 'c', value: null },
        ]);
        const got: ConsumedRecord[] = [];
        await consumer(`${t}-g`, [t, plain]).run(async (b) => {
          got.push(...b.records);
        });
        await waitUntil(
          '5 records',
          () => got.length >= 5,
          () => got,
        );
        expect(got.filter((r) => r.topic === t).map((r) => [r.key, r.value])).toEqual([
          ['a', '{"x":1}'],
          ['a', null],
          ['b', ''],
        ]);
        expect(got.filter((r) => r.topic === plain).map((r) => [r.key, r.value])).toEqual([
          [null, 'keyless'],
          ['c', null],
        ]);
        await p.close();
      },
      TEST_TIMEOUT,
    );

    it(
      'ensureTopics is idempotent, concurrent calls included, and keeps existing topics and records',
      async () => {
        const t1 = h.topic('ensure-a');
        const t2 = h.topic('ensure-b');
        await h.log.admin.ensureTopics([{ name: t1, partitions: 2, retentionMs: 3_600_000 }]);
        const p = h.log.producer();
        await p.send(range(0, 20).map((i) => ({ topic: t1, key: `k${i}`, value: `before-${i}` })));

        await h.log.admin.ensureTopics([{ name: t1, partitions: 2, retentionMs: 3_600_000 }]);
        await h.log.admin.ensureTopics([{ name: t1, partitions: 6 }]); // an existing topic is left alone
        await Promise.all([
          h.log.admin.ensureTopics([{ name: t2, partitions: 1, compacted: true }]),
          h.log.admin.ensureTopics([{ name: t2, partitions: 1, compacted: true }]),
          h.log.admin.ensureTopics([
            { name: t1, partitions: 2 },
            { name: t2, partitions: 1, compacted: true },
          ]),
        ]);
        await h.log.admin.ensureTopics([
          { name: t1, partitions: 2 },
          { name: t2, partitions: 1, compacted: true },
        ]);
        await p.send([...range(0, 20).map((i) => ({ topic: t1, key: `k${i}`, value: `after-${i}` })), { topic: t2, key: 'x', value: 'in-t2' }]);

        const got: ConsumedRecord[] = [];
        await consumer(`${t1}-g`, [t1, t2]).run(async (b) => {
          got.push(...b.records);
        });
        await waitUntil(
          '41 records',
          () => got.length >= 41,
          () => got.length,
        );
        const t1Values = got.filter((r) => r.topic === t1).map((r) => r.value);
        expect(t1Values).toHaveLength(40);
        expect(t1Values).toEqual(expect.arrayContaining([...range(0, 20).map((i) => `before-${i}`), ...range(0, 20).map((i) => `after-${i}`)]));
        expect(new Set(got.filter((r) => r.topic === t1).map((r) => r.partition))).toEqual(new Set([0, 1]));
        expect(got.filter((r) => r.topic === t2).map((r) => r.value)).toEqual(['in-t2']);
        await p.close();
      },
      TEST_TIMEOUT,
    );

    it(
      'tells a group its lag per partition: everything before it first reads, nothing once it committed',
      async () => {
        if (!h.log.admin.lag) return; // a log without lag is read as "cannot tell" (null gauges, no series)
        const t = h.topic('lag');
        await h.log.admin.ensureTopics([{ name: t, partitions: 2 }]);
        const p = h.log.producer();
        await p.send(range(0, 5).map((i) => ({ topic: t, key: `k${i}`, value: `v${i}` })));
        const total = async () => (await h.log.admin.lag!(`${t}-g`, [t])).reduce((n, x) => n + x.lag, 0);
        const parts = await h.log.admin.lag(`${t}-g`, [t]);
        expect(parts.map((x) => x.partition).sort()).toEqual([0, 1]);
        expect(await total()).toBe(5);
        await consumer(`${t}-g`, [t]).run(async () => {});
        const deadline = Date.now() + WAIT;
        while ((await total()) > 0 && Date.now() < deadline) await sleep(50);
        expect(await total()).toBe(0);
        await p.close();
      },
      TEST_TIMEOUT,
    );

    it('answers ping', async () => {
      await expect(h.log.admin.ping()).resolves.toBeUndefined();
    });
  });
};
