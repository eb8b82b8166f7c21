import { describe, expect, it } from 'vitest';
import { createBatchTracker } from '../../core/log/batch-tracker';

// The bookkeeping behind pipelined consumption (both log adapters use it; the contract
// tests in test/contract/log.contract-pipeline.ts hold the adapters to the result).

const flush = async () => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

const setup = (max = 100) => {
  const commits: string[] = [];
  const rewinds: string[] = [];
  const t = createBatchTracker(max, {
    commit: (topic, partition, offset) => commits.push(`${topic}/${partition}@${offset}`),
    rewind: (topic, partition, offset) => rewinds.push(`${topic}/${partition}@${offset}`),
  });
  const batches: { resolve: () => void; reject: (e: Error) => void }[] = [];
  const take = (partition: number, first: number, next: number) =>
    t.take('t', partition, BigInt(first), BigInt(next), next - first, () => new Promise<void>((resolve, reject) => batches.push({ resolve, reject })));
  return { t, commits, rewinds, batches, take };
};

describe('batch tracker', () => {
  it("marks the first maxUnresolved records of a partition it was just given as maybe seen (its last owner's uncommitted window), not those after, and again after the partition was lost and given back", async () => {
    const seen: boolean[] = [];
    const t = createBatchTracker(10, { commit: () => {}, rewind: () => {} });
    const take = (first: number, next: number) => t.take('t', 0, BigInt(first), BigInt(next), next - first, (_release, maybeSeen) => (seen.push(maybeSeen), Promise.resolve()));
    take(100, 105);
    take(105, 110);
    take(110, 115);
    await flush();
    t.reassign(() => false);
    take(115, 120);
    expect(seen).toEqual([true, true, false, true]);
  });

  it("marks every record below the partition's high-water mark at its first fetch as maybe seen, past maxUnresolved (a last owner whose head batch never resolved committed none of the later ones it handled), or below its end when assigned", async () => {
    const seen: string[] = [];
    const t = createBatchTracker(10, { commit: () => {}, rewind: () => {} });
    const take = (partition: number, first: number, next: number, high?: number) =>
      t.take(
        't',
        partition,
        BigInt(first),
        BigInt(next),
        next - first,
        (_release, maybeSeen) => (seen.push(`${partition}:${first}:${maybeSeen}`), Promise.resolve()),
        high === undefined ? undefined : BigInt(high),
      );
    take(0, 100, 105, 140); // the last owner may have handled up to 139
    take(0, 120, 130, 160);
    take(0, 135, 140, 170);
    take(0, 140, 145, 180); // later high-water marks are records produced since: nobody had them
    t.bound('t', 1, 90n); // the end read at the assignment, past the first maxUnresolved
    take(1, 50, 60);
    take(1, 85, 90);
    take(1, 90, 95);
    await flush();
    expect(seen).toEqual(['0:100:true', '0:120:true', '0:135:true', '0:140:false', '1:50:true', '1:85:true', '1:90:false']);
  });

  it('looks up no record past the high-water mark of the first fetch, though within maxUnresolved: a fresh group or a drained partition costs no lookup', async () => {
    const seen: boolean[] = [];
    const t = createBatchTracker(1000, { commit: () => {}, rewind: () => {} });
    const take = (first: number, next: number, high: number) =>
      t.take('t', 0, BigInt(first), BigInt(next), next - first, (_release, maybeSeen) => (seen.push(maybeSeen), Promise.resolve()), BigInt(high));
    take(100, 105, 105); // all there was: maybe the last owner's
    take(105, 110, 110); // produced after that fetch
    take(110, 200, 400);
    await flush();
    expect(seen).toEqual([true, false, false]);
  });

  it("tells batches at or past the partition's end when it was assigned (its last owner never had them), before or after its first batch; a new assignment forgets that end", async () => {
    const seen: string[] = [];
    const t = createBatchTracker(1000, { commit: () => {}, rewind: () => {} });
    const take = (partition: number, first: number, next: number) =>
      t.take('t', partition, BigInt(first), BigInt(next), next - first, (_release, maybeSeen, after) => (seen.push(`${maybeSeen}/${after}`), Promise.resolve()));
    t.bound('t', 0, 105n); // told before the first batch
    take(0, 100, 105);
    take(0, 105, 110);
    take(1, 50, 55); // told after its first batch: the later ones are past it
    t.bound('t', 1, 55n);
    take(1, 55, 60);
    await flush();
    t.reassign(() => false);
    take(0, 110, 115); // given back: nothing known of its end this time
    // Past the end nothing is the last owner's: not looked up, though within maxUnresolved.
    expect(seen).toEqual(['true/false', 'false/true', 'true/false', 'false/true', 'true/false']);
  });

  it('commits a partition only past a prefix of resolved batches, partitions independently', async () => {
    const { commits, batches, take } = setup();
    take(0, 0, 5);
    take(0, 5, 10);
    take(1, 0, 3);
    batches[1]!.resolve();
    batches[2]!.resolve();
    await flush();
    expect(commits).toEqual(['t/1@3']);
    batches[0]!.resolve();
    await flush();
    expect(commits).toEqual(['t/1@3', 't/0@10']);
  });

  it("a rejection rewinds to the batch's first offset; later batches of it commit nothing, earlier ones still do", async () => {
    const { t, commits, rewinds, batches, take } = setup();
    take(0, 0, 5);
    take(0, 5, 10);
    take(0, 10, 15);
    batches[1]!.reject(new Error('boom'));
    await flush();
    expect(rewinds).toEqual(['t/0@5']);
    expect(t.position('t', 0)).toBe(5n);
    batches[2]!.resolve();
    batches[0]!.resolve();
    await flush();
    expect(commits).toEqual(['t/0@5']);
    // The partition read again from 5: commits go on from there.
    take(0, 5, 15);
    batches[3]!.resolve();
    await flush();
    expect(commits).toEqual(['t/0@5', 't/0@15']);
  });

  it('bounds the records in flight, orphans included, and reports idle once all settle', async () => {
    const { t, batches, take } = setup(10);
    take(0, 0, 6);
    expect(t.hasRoom()).toBe(true);
    take(0, 6, 12);
    expect(t.hasRoom()).toBe(false);
    let room = false;
    void t.room().then(() => (room = true));
    t.reassign(() => false); // revoked: the batches no longer commit, but still run
    await flush();
    expect(room).toBe(false);
    batches[0]!.resolve();
    await flush();
    expect(room).toBe(true);
    let idle = false;
    void t.idle().then(() => (idle = true));
    await flush();
    expect(idle).toBe(false);
    batches[1]!.resolve();
    await flush();
    expect(idle).toBe(true);
    expect(t.unresolved()).toBe(0);
  });

  it('a revoked partition commits nothing; a kept one goes on', async () => {
    const { t, commits, batches, take } = setup();
    take(0, 0, 5);
    take(1, 0, 5);
    expect(t.reassign((_, p) => p === 1)).toEqual([{ topic: 't', partition: 1, position: 5n }]);
    batches[0]!.resolve();
    batches[1]!.resolve();
    await flush();
    expect(commits).toEqual(['t/1@5']);
    expect(t.position('t', 0)).toBeUndefined();
  });
});
