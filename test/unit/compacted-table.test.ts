import { describe, expect, it } from 'vitest';
import { CompactedTable } from '../../core/log/compacted-table';
import type { Logger } from '../../core/ports/logger';

// The one table of a compacted topic (core/log/compacted-table.ts) and its one rule for a
// malformed record: the row keeps its last good record; the record is counted and logged.

type Row = { id: string; n: number };
const decode = (key: string, value: string): Row | undefined => {
  const v = JSON.parse(value) as Partial<Row>;
  return typeof v.id === 'string' && typeof v.n === 'number' && v.id === key ? { id: v.id, n: v.n } : undefined;
};
const logged: { msg: string; f?: Record<string, unknown> }[] = [];
const log: Logger = { debug() {}, info() {}, error() {}, warn: (msg, f) => void logged.push({ msg, f }) };
const table = () => {
  logged.length = 0;
  return new CompactedTable<Row>({ topic: 'things', decode, log });
};
const rec = (id: string, n: number) => JSON.stringify({ id, n });

describe('CompactedTable', () => {
  it('sets a row from a good record, and a later one replaces it', () => {
    const t = table();
    expect(t.apply('a', rec('a', 1))).toBe('set');
    expect(t.apply('a', rec('a', 2))).toBe('set');
    expect(t.get('a')).toEqual({ id: 'a', n: 2 });
    expect(t.size).toBe(1);
  });

  it('deletes the row on a tombstone', () => {
    const t = table();
    t.apply('a', rec('a', 1));
    expect(t.apply('a', null)).toBe('deleted');
    expect(t.has('a')).toBe(false);
  });

  it('keeps the last good record when a record is not JSON, counts and logs it', () => {
    const t = table();
    t.apply('a', rec('a', 1));
    expect(t.apply('a', '{not json')).toBe('malformed');
    expect(t.get('a')).toEqual({ id: 'a', n: 1 });
    expect(t.malformed).toBe(1);
    expect(logged).toEqual([{ msg: expect.stringContaining('malformed record'), f: expect.objectContaining({ topic: 'things', key: 'a' }) }]);
  });

  it('keeps the last good record when a record fails the schema', () => {
    const t = table();
    t.apply('a', rec('a', 1));
    expect(t.apply('a', JSON.stringify({ id: 'a', n: 'two' }))).toBe('malformed');
    expect(t.get('a')).toEqual({ id: 'a', n: 1 });
  });

  it('keeps the last good record when a record sits under a key that is not its own', () => {
    const t = table();
    t.apply('a', rec('a', 1));
    expect(t.apply('a', rec('b', 9))).toBe('malformed');
    expect(t.get('a')).toEqual({ id: 'a', n: 1 });
    expect(t.has('b')).toBe(false);
  });

  it('adds no row for a malformed record of a key it does not have', () => {
    const t = table();
    expect(t.apply('c', 'null')).toBe('malformed');
    expect(t.has('c')).toBe(false);
    expect(t.malformed).toBe(1);
  });

  it('folds records and tombstones into a row when told how', () => {
    const t = new CompactedTable<Row, { sum: number; ended: boolean }>({
      topic: 'things',
      decode,
      merge: (_k, next, old) => ({ sum: (old?.sum ?? 0) + next.n, ended: false }),
      tombstone: (_k, old) => ({ sum: old?.sum ?? 0, ended: true }),
    });
    t.apply('a', rec('a', 1));
    t.apply('a', rec('a', 2));
    t.apply('a', 'garbage');
    t.apply('a', null);
    expect(t.get('a')).toEqual({ sum: 3, ended: true });
  });
});
