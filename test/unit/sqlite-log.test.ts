import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ConsumedRecord } from '../../core/ports/log';
import { SqliteLog } from '../../workers/sqlite/log';

// What the SQLite log adds to the Log contract (log.sqlite.test.ts): it survives its
// process, one process owns a file, and retention/compaction keep the file from growing.

const HOUR = 3_600_000;
const dirs: string[] = [];
const logs: SqliteLog[] = [];
const fresh = () => {
  const d = mkdtempSync(join(tmpdir(), 'howk-sqlite-'));
  dirs.push(d);
  return join(d, 'howk.db');
};
const open = (path: string, clock?: { now: number }) => {
  const l = new SqliteLog({ path, compactEveryMs: 0, ...(clock ? { now: () => clock.now } : {}) });
  logs.push(l);
  return l;
};
afterEach(async () => {
  for (const l of logs.splice(0)) await l.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const consumeAll = async (log: SqliteLog, groupId: string, topic: string, n: number): Promise<ConsumedRecord[]> => {
  const got: ConsumedRecord[] = [];
  const c = log.consumer({ groupId, topics: [topic] });
  await c.run(async (b) => void got.push(...b.records));
  const end = Date.now() + 10_000;
  while (got.length < n && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
  await new Promise((r) => setTimeout(r, 100));
  await c.stop();
  return got;
};

const values = (rs: ConsumedRecord[]) => rs.map((r) => r.value);
const count = (log: SqliteLog, topic: string) => (log.db.prepare('SELECT COUNT(*) AS n FROM records WHERE topic = ?').get(topic) as { n: number }).n;

describe('SQLite log', () => {
  it('keeps records, topics and committed offsets across a reopen: a group resumes after its last commit', async () => {
    const path = fresh();
    const a = open(path);
    await a.admin.ensureTopics([{ name: 'q', partitions: 2 }]);
    await a.producer().send(Array.from({ length: 10 }, (_, i) => ({ topic: 'q', key: `k${i}`, value: `v${i}` })));
    expect(await consumeAll(a, 'g', 'q', 10)).toHaveLength(10);
    await a.producer().send([{ topic: 'q', key: 'late', value: 'late' }]);
    await a.close();

    const b = open(path);
    expect(b.topic('q').partitions).toBe(2);
    expect(values(await consumeAll(b, 'g', 'q', 1))).toEqual(['late']);
    expect(values(await consumeAll(b, 'other', 'q', 11)).sort()).toEqual([...Array.from({ length: 10 }, (_, i) => `v${i}`), 'late'].sort());
    // Offsets go on from where they were: nothing is overwritten.
    await b.producer().send([{ topic: 'q', key: 'late', value: 'later' }]);
    expect(values(await consumeAll(b, 'g', 'q', 1))).toEqual(['later']);
  });

  it('belongs to one process at a time', async () => {
    const path = fresh();
    const a = open(path);
    await a.producer().send([{ topic: 'q', key: 'k', value: 'v' }]);
    expect(() => open(path)).toThrow(/in use by another process/);
  });

  it('keeps only the latest record per key on a compacted topic, and drops old tombstones', async () => {
    const clock = { now: Date.now() };
    const log = open(fresh(), clock);
    await log.admin.ensureTopics([{ name: 'state', partitions: 2, compacted: true }]);
    const p = log.producer();
    for (let round = 0; round < 5; round++) await p.send(Array.from({ length: 20 }, (_, i) => ({ topic: 'state', key: `w${i}`, value: `r${round}` })));
    await p.send([{ topic: 'state', key: 'w0', value: null }]);
    expect(count(log, 'state')).toBe(101);

    log.compact();
    const left = await consumeAll(log, 'g', 'state', 20);
    expect(left).toHaveLength(20);
    expect(left.find((r) => r.key === 'w0')?.value).toBeNull();
    expect(left.filter((r) => r.key !== 'w0').every((r) => r.value === 'r4')).toBe(true);

    clock.now += 25 * HOUR;
    log.compact();
    expect(count(log, 'state')).toBe(19);
  });

  it('compacts what later rounds and a reopened file supersede', async () => {
    const path = fresh();
    const a = open(path);
    await a.admin.ensureTopics([{ name: 'state', partitions: 1, compacted: true }]);
    await a.producer().send([
      { topic: 'state', key: 'k', value: 'v1' },
      { topic: 'state', key: 'j', value: 'j1' },
    ]);
    a.compact();
    await a.producer().send([{ topic: 'state', key: 'k', value: 'v2' }]);
    a.compact();
    expect(count(a, 'state')).toBe(2);
    await a.producer().send([{ topic: 'state', key: 'j', value: 'j2' }]);
    await a.close();
    const b = open(path); // compacts at open
    expect(values(await consumeAll(b, 'g', 'state', 2))).toEqual(['v2', 'j2']);
    expect(count(b, 'state')).toBe(2);
  });

  it('deletes records past retention once every group has consumed them, never before', async () => {
    const clock = { now: Date.now() };
    const log = open(fresh(), clock);
    await log.admin.ensureTopics([{ name: 'q', partitions: 1, retentionMs: HOUR }]);
    const p = log.producer();
    await p.send(Array.from({ length: 10 }, (_, i) => ({ topic: 'q', key: 'k', value: `old${i}` })));
    await consumeAll(log, 'fast', 'q', 10);
    const slow = log.consumer({ groupId: 'slow', topics: ['q'] });
    await slow.run(async () => {
      throw new Error('not yet');
    });
    await new Promise((r) => setTimeout(r, 50));
    await slow.stop();

    clock.now += 2 * HOUR;
    log.compact();
    expect(count(log, 'q')).toBe(10); // group "slow" has consumed none of them

    expect(await consumeAll(log, 'slow', 'q', 10)).toHaveLength(10);
    await p.send([{ topic: 'q', key: 'k', value: 'new' }]);
    log.compact();
    expect(count(log, 'q')).toBe(1); // the new one is within retention
  });

  it('stops growing: a steady stream that is consumed and compacted reuses its pages', async () => {
    const clock = { now: Date.now() };
    const path = fresh();
    const log = open(path, clock);
    await log.admin.ensureTopics([
      { name: 'q', partitions: 2, retentionMs: HOUR },
      { name: 'state', partitions: 2, compacted: true },
    ]);
    const p = log.producer();
    const body = 'x'.repeat(2000);
    const c = log.consumer({ groupId: 'g', topics: ['q'] });
    let consumed = 0;
    await c.run(async (b) => void (consumed += b.records.length));
    const sizes: number[] = [];
    for (let round = 0; round < 8; round++) {
      await p.send(Array.from({ length: 500 }, (_, i) => ({ topic: 'q', key: `k${i}`, value: body })));
      await p.send(Array.from({ length: 500 }, (_, i) => ({ topic: 'state', key: `w${round * 500 + i}`, value: body })));
      await p.send(Array.from({ length: 500 }, (_, i) => ({ topic: 'state', key: `w${round * 500 + i}`, value: null })));
      while (consumed < (round + 1) * 500) await new Promise((r) => setTimeout(r, 10));
      await new Promise((r) => setTimeout(r, 50));
      clock.now += 25 * HOUR;
      log.compact();
      sizes.push(statSync(path).size);
    }
    await c.stop();
    expect(count(log, 'q') + count(log, 'state')).toBe(0);
    // 8 rounds wrote about 16 MB; the file stays at the size of about one round.
    expect(Math.max(...sizes.slice(2))).toBeLessThanOrEqual(sizes[1]! * 1.5);
  });
});
