import { describe, expect, it } from 'vitest';
import { compareStamps, parseSnapshot, snapshotValue } from '../../core/records/state';
import { createStateFold, restoreItemOf, type StateRecord } from '../../core/reconcile/replay';
import { T0, hook, snapshot, stamp, tombstone } from '../helpers/reconcile-fixtures';

// The replay rules of a rebuild (core/reconcile/replay.ts): which howk.state record of a
// webhook is its state. Records are folded in offset order, as a partition yields them.

const fold = (records: StateRecord[]) => {
  const f = createStateFold();
  records.forEach(f.add);
  return f;
};
const liveIds = (records: StateRecord[]) =>
  fold(records)
    .live()
    .map((s) => s.webhookId)
    .sort();

describe('replay rules', () => {
  it('an empty topic leaves nothing to restore', () => {
    const f = fold([]);
    expect(f.live()).toEqual([]);
    expect(f.stats.records).toBe(0);
  });

  it('a tombstone after a snapshot ends the webhook (delivered or dead: never resurrected)', () => {
    const w = hook('wh_a', { attempt: 1 });
    expect(liveIds([snapshot(w, stamp(T0)), tombstone('wh_a')])).toEqual([]);
  });

  it('a tombstone wins over every older snapshot, whatever their stamps', () => {
    const w = hook('wh_a', { attempt: 2 });
    // A snapshot stamped in the future (a worker with a fast clock) still ends at the tombstone.
    expect(liveIds([snapshot(hook('wh_a', { attempt: 1 }), stamp(T0 + 99_999)), snapshot(w, stamp(T0)), tombstone('wh_a')])).toEqual([]);
  });

  it('a snapshot after the tombstone of a retried webhook (more progress) brings it back', () => {
    const before = hook('wh_a', { attempt: 3 });
    const retried = hook('wh_a', { attempt: 4, max_attempts: 5 });
    const f = fold([snapshot(before, stamp(T0)), tombstone('wh_a'), snapshot(retried, stamp(T0 + 5000))]);
    expect(f.live().map((s) => s.webhook.attempt)).toEqual([4]);
    expect(f.stats.revived).toBe(1);
  });

  it('a late snapshot of a superseded attempt after the tombstone does not (a zombie worker)', () => {
    const a1 = hook('wh_a', { attempt: 1 });
    const a2 = hook('wh_a', { attempt: 2 });
    // Attempt 1's outcome redelivered and written again after attempt 2 was delivered.
    const f = fold([snapshot(a1, stamp(T0)), snapshot(a2, stamp(T0 + 10)), tombstone('wh_a'), snapshot(a2, stamp(T0 + 20)), snapshot(a1, stamp(T0 + 30))]);
    expect(f.live()).toEqual([]);
    expect(f.stats.superseded).toBe(2);
  });

  it('a snapshot after a tombstone whose earlier snapshots were compacted away is live', () => {
    expect(liveIds([tombstone('wh_a'), snapshot(hook('wh_a', { attempt: 1 }), stamp(T0))])).toEqual(['wh_a']);
  });

  it('equal timestamps and equal progress: the later offset wins', () => {
    const first = hook('wh_a', { attempt: 2, headers: { n: 'first' } });
    const second = hook('wh_a', { attempt: 2, headers: { n: 'second' } });
    const [s] = fold([snapshot(first, stamp(T0, 7)), snapshot(second, stamp(T0, 7))]).live();
    expect(s!.webhook.headers.n).toBe('second');
  });

  it('equal progress: the newer stamp wins, an older one at a later offset is superseded', () => {
    const parked = hook('wh_a', { attempt: 2, headers: { n: 'parked' } });
    const retry = hook('wh_a', { attempt: 2, headers: { n: 'retry' } });
    const f = fold([snapshot(retry, stamp(T0, 1)), snapshot(parked, stamp(T0, 2)), snapshot(retry, stamp(T0, 0))]);
    expect(f.live()[0]!.webhook.headers.n).toBe('parked');
    expect(f.stats.superseded).toBe(1);
  });

  it('more progress wins over a newer stamp (a worker whose clock runs behind)', () => {
    const f = fold([snapshot(hook('wh_a', { attempt: 3 }), stamp(T0)), snapshot(hook('wh_a', { attempt: 2 }), stamp(T0 + 60_000))]);
    expect(f.live()[0]!.webhook.attempt).toBe(3);
  });

  it('deferrals count as progress (a 429 keeps the attempt number)', () => {
    const f = fold([snapshot(hook('wh_a', { attempt: 1, deferrals: 2 }), stamp(T0)), tombstone('wh_a'), snapshot(hook('wh_a', { attempt: 2, deferrals: 1 }), stamp(T0 + 1))]);
    expect(f.live()).toEqual([]);
  });

  it('a partition that ends in tombstones: only the webhooks without one are restored', () => {
    const records: StateRecord[] = [];
    for (let i = 0; i < 10; i++) records.push(snapshot(hook(`wh_${i}`), stamp(T0, i)));
    for (let i = 0; i < 10; i += 2) records.push(tombstone(`wh_${i}`));
    expect(liveIds(records)).toEqual(['wh_1', 'wh_3', 'wh_5', 'wh_7', 'wh_9']);
  });

  it('skips records without a key and snapshots that do not parse, and counts them', () => {
    const f = fold([{ key: null, value: 'x' }, { key: 'wh_bad', value: '{"webhook_id":"wh_bad"}' }, { key: 'wh_bad2', value: 'not json' }, snapshot(hook('wh_ok'), stamp(T0))]);
    expect(f.live().map((s) => s.webhookId)).toEqual(['wh_ok']);
    expect(f.stats.skipped).toBe(3);
  });

  it('compares 19-digit stamps exactly, by length first', () => {
    expect(compareStamps('1750000000000000001', '1750000000000000002')).toBeLessThan(0);
    expect(compareStamps('9007199254740993001', '9007199254740993000')).toBeGreaterThan(0);
    expect(compareStamps('999', '1000')).toBeLessThan(0);
    expect(compareStamps(stamp(T0, 3), stamp(T0, 3))).toBe(0);
  });
});

describe('what a live snapshot restores', () => {
  it('the recorded status, and the retry with the webhook bytes as they were enqueued', () => {
    const w = hook('wh_a', { attempt: 2 });
    const rec = snapshot(w, stamp(T0, 5), T0 + 4000);
    const item = restoreItemOf(parseSnapshot(rec.value));
    expect(item.status).toMatchObject({ webhook_id: 'wh_a', state: 'retrying', attempts: 2, updated_at_ns: stamp(T0, 5), last_status_code: 503 });
    expect(item.retry).toMatchObject({ id: 'wh_a', dueAt: T0 + 4000 });
    expect(item.retry!.data).toContain('"payload":{"n": 1.0, "big": 12345678901234567890}');
  });

  it('completes the status of a held webhook, whose snapshot records only what the hold changed', () => {
    const w = hook('wh_p', { attempt: 0 });
    const value = snapshotValue(w, { webhook_id: 'wh_p', updated_at_ns: stamp(T0), state: 'pending', held: 'paused', next_retry_at: null }, T0);
    const item = restoreItemOf(parseSnapshot(value));
    expect(item.status).toMatchObject({ webhook_id: 'wh_p', config_id: 'cfg_r', endpoint_hash: 'ab'.repeat(16), state: 'pending', held: 'paused', attempts: 0, max_attempts: 5 });
    // Due at once: back through the pending topic, where the pause holds it again if still paused.
    expect(item.retry!.dueAt).toBe(T0);
  });
});
