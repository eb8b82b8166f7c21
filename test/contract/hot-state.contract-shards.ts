import { expect, it } from 'vitest';
import { shardOf } from '../../core/domain/retry-shards';
import type { HotWriter, RebuildState, RetryEntry, RetrySchedule, ShardLeases } from '../../core/ports/hot-state';
import { elapse, ns, roleContract, statusOf, withHarness, type MakeHotState } from './hot-state.fixtures';

// The retry schedule in shards: claims from the shards asked, fair shares per config within a
// pass, schedulers' shard leases, and a rebuild that puts each retry in its shard.

const LEASE = 30_000;
const SHARDS = 8;
const retry = (id: string, dueAt: number, config = 'cfg_a'): RetryEntry => ({ id, dueAt, data: `{"id":"${id}","config_id":"${config}","payload":{}}` });
const ids = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => `wh_${prefix}_${String(i).padStart(4, '0')}`);

export const shardsContract = (name: string, make: MakeHotState<HotWriter & RetrySchedule & ShardLeases & RebuildState>): void =>
  roleContract('retry shards', name, make, (ctx) => {
    it('keeps each retry in the shard of its id: a claim of some shards hands out only theirs, all shards together every one', async () => {
      await withHarness(ctx, { ttls: { retry_shards: SHARDS } }, async ({ state, clock }) => {
        expect(state.retryShards).toBe(SHARDS);
        const t = clock.now();
        const all = ids(64, 's');
        await state.apply({ retries: all.map((id) => retry(id, t - 10)) });
        const seen: string[] = [];
        for (let s = 0; s < SHARDS; s++) {
          const got = (await state.claimDueRetries(t, 1000, LEASE, [s])).map((r) => r.id);
          expect(got.every((id) => shardOf(id, SHARDS) === s)).toBe(true);
          expect(got.sort()).toEqual(all.filter((id) => shardOf(id, SHARDS) === s));
          seen.push(...got);
        }
        expect(seen.sort()).toEqual(all);
        expect(await state.retryCount()).toBe(64);
      });
    });

    it('fills the limit from the shards that have due retries when the others have none', async () => {
      await withHarness(ctx, { ttls: { retry_shards: SHARDS } }, async ({ state, clock }) => {
        const t = clock.now();
        const few = ids(40, 'f');
        await state.apply({ retries: few.map((id) => retry(id, t - 10)) });
        expect((await state.claimDueRetries(t, 25, LEASE)).length).toBe(25);
        expect((await state.claimDueRetries(t, 25, LEASE)).length).toBe(15);
      });
    });

    it("does not let one config's retry storm hold back another config's due retries", async () => {
      const { state, clock } = ctx.h();
      const t = clock.now();
      // 2,000 retries of one config due well before the other config's three.
      const storm = ids(2000, 'storm');
      await state.apply({ retries: storm.map((id, i) => retry(id, t - 60_000 + i, 'cfg_storm')) });
      const calm = ['wh_calm_1', 'wh_calm_2', 'wh_calm_3'];
      await state.apply({ retries: calm.map((id) => retry(id, t - 5, 'cfg_calm')) });
      // One pass of 100: the calm config's retries go in it, the storm waits for the rest.
      const got = (await state.claimDueRetries(t, 100, LEASE)).map((r) => r.id);
      expect(got).toHaveLength(100);
      expect(got.filter((id) => calm.includes(id)).sort()).toEqual(calm);
    });

    it('lets configs with due work take turns when more of them are due than a pass serves', async () => {
      await withHarness(ctx, { ttls: { retry_shards: 1 } }, async ({ state, clock }) => {
        const t = clock.now();
        // Ten configs with a backlog due long before the eleventh config's one retry.
        for (let c = 0; c < 10; c++) await state.apply({ retries: ids(20, `b${c}`).map((id, i) => retry(id, t - 10_000 + i, `cfg_backlog_${c}`)) });
        await state.apply({ retries: [retry('wh_late', t - 5, 'cfg_late')] });
        const passes: string[][] = [];
        for (let p = 0; p < 3; p++) passes.push((await state.claimDueRetries(t, 5, LEASE)).map((r) => r.id));
        // Passes of 5 serve 5 configs each: the eleventh's turn comes by the third pass, not after the 200.
        expect(passes.flat()).toContain('wh_late');
        expect(passes.flat()).toHaveLength(15);
      });
    });

    it('splits the shards between live schedulers, never one shard to two, and rebalances when one leaves', async () => {
      await withHarness(ctx, { ttls: { retry_shards: SHARDS } }, async ({ state, clock }) => {
        const lease = 60_000;
        const owners = ['sched_a', 'sched_b', 'sched_c'];
        // A few passes: the first one in takes every shard before it sees the others, then gives back all but its part.
        let held: number[][] = [];
        for (let pass = 0; pass < 6; pass++) held = await Promise.all(owners.map(async (o) => state.holdShards(o, clock.now(), lease)));
        const flat = held.flat();
        expect(new Set(flat).size).toBe(flat.length);
        expect(flat.sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
        for (const h of held) expect(h.length).toBeLessThanOrEqual(Math.ceil(SHARDS / 3));
        await state.releaseShards('sched_c');
        const a = await state.holdShards('sched_a', clock.now(), lease);
        const b = await state.holdShards('sched_b', clock.now(), lease);
        expect([...a, ...b].sort((x, y) => x - y)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
      });
    });

    it("hands a dead scheduler's shards to the others once its lease has run out, not before", async () => {
      await withHarness(ctx, { ttls: { retry_shards: SHARDS } }, async ({ state, clock }) => {
        const lease = 400;
        const dead = await state.holdShards('sched_dead', clock.now(), lease);
        expect(dead).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
        expect(await state.holdShards('sched_live', clock.now(), lease)).toEqual([]);
        await elapse(clock, lease + 100);
        expect(await state.holdShards('sched_live', clock.now(), lease)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
      });
    });

    it('a rebuild puts each restored retry in the shard of its id', async () => {
      await withHarness(ctx, { ttls: { retry_shards: SHARDS } }, async ({ state, clock }) => {
        const t = clock.now();
        const restored = ids(16, 'r');
        await state.restore(restored.map((id) => ({ status: statusOf(id, ns(t)), retry: retry(id, t - 10) })));
        for (let s = 0; s < SHARDS; s++) {
          const got = (await state.claimDueRetries(t, 100, LEASE, [s])).map((r) => r.id).sort();
          expect(got).toEqual(restored.filter((id) => shardOf(id, SHARDS) === s));
        }
      });
    });
  });
