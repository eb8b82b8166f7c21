import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LogRecord } from '../../core/ports/log';
import type { TopicReader } from '../../core/ports/recovery';

// TopicReader (core/ports/recovery.ts), the port a rebuild replays howk.state and
// howk.deadletter through: memory (reconcile-reader.memory.test.ts) and Kafka
// (reconcile-reader.kafka.test.ts) are held to the same behaviour.

export type ReaderHarness = {
  reader: TopicReader;
  /** A fresh topic (compacted like howk.state) and its name. */
  topic(partitions: number): Promise<string>;
  append(records: LogRecord[]): Promise<void>;
  cleanup(): Promise<void>;
};

const IDLE = 20_000;

export const readerContract = (name: string, make: () => Promise<ReaderHarness>) =>
  describe(`TopicReader contract: ${name}`, () => {
    let h: ReaderHarness;
    beforeEach(async () => {
      h = await make();
    });
    afterEach(async () => {
      await h.cleanup();
    });

    const readAll = async (topic: string) => {
      const byKey = new Map<string, (string | null)[]>();
      const offsets = new Map<number, bigint[]>();
      const summary = await h.reader.readToEnd(
        topic,
        async (b) => {
          for (const r of b.records) {
            byKey.set(r.key ?? '', [...(byKey.get(r.key ?? '') ?? []), r.value]);
            offsets.set(b.partition, [...(offsets.get(b.partition) ?? []), BigInt(r.offset)]);
          }
        },
        { idleTimeoutMs: IDLE },
      );
      return { summary, byKey, offsets };
    };

    it('returns at once for an empty topic', async () => {
      const topic = await h.topic(3);
      const t0 = Date.now();
      const { summary } = await readAll(topic);
      expect(summary).toEqual({ records: 0, partitions: 0, idled: [] });
      expect(Date.now() - t0).toBeLessThan(3000);
    });

    it('reads every record to the end, each partition in offset order, each key in write order', async () => {
      const topic = await h.topic(3);
      const recs: LogRecord[] = [];
      for (let i = 0; i < 60; i++) recs.push({ topic, key: `k${i % 7}`, value: `v${i}` });
      await h.append(recs);
      const { summary, byKey, offsets } = await readAll(topic);
      expect(summary.records).toBe(60);
      expect(summary.idled).toEqual([]);
      for (let k = 0; k < 7; k++) expect(byKey.get(`k${k}`)).toEqual(recs.filter((r) => r.key === `k${k}`).map((r) => r.value));
      for (const list of offsets.values()) expect([...list].sort((a, b) => (a < b ? -1 : 1))).toEqual(list);
    });

    it('finishes without waiting when partitions end in tombstones', async () => {
      const topic = await h.topic(2);
      await h.append([
        { topic, key: 'a', value: 's1' },
        { topic, key: 'b', value: 's1' },
        { topic, key: 'a', value: null },
        { topic, key: 'b', value: null },
      ]);
      const t0 = Date.now();
      const { summary, byKey } = await readAll(topic);
      expect(Date.now() - t0).toBeLessThan(IDLE / 2);
      expect(summary).toMatchObject({ records: 4, idled: [] });
      expect(byKey.get('a')).toEqual(['s1', null]);
    });

    it('stops at the high-water marks taken when the read began', async () => {
      const topic = await h.topic(1);
      await h.append([
        { topic, key: 'a', value: '1' },
        { topic, key: 'a', value: '2' },
      ]);
      let appended = false;
      const seen: (string | null)[] = [];
      await h.reader.readToEnd(
        topic,
        async (b) => {
          seen.push(...b.records.map((r) => r.value));
          if (!appended) {
            appended = true;
            await h.append([{ topic, key: 'a', value: 'later' }]);
          }
        },
        { idleTimeoutMs: IDLE },
      );
      expect(seen).toEqual(['1', '2']);
    });

    it("rejects when the caller's handler fails", async () => {
      const topic = await h.topic(1);
      await h.append([{ topic, key: 'a', value: '1' }]);
      await expect(
        h.reader.readToEnd(
          topic,
          async () => {
            throw new Error('redis went away');
          },
          { idleTimeoutMs: IDLE },
        ),
      ).rejects.toThrow(/redis went away/);
    });
  });
