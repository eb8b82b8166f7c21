import { expect, it } from 'vitest';
import type { HotWriter, RetryEntry, RetrySchedule } from '../../core/ports/hot-state';
import { encodeWebhook } from '../../core/records/webhook';
import { hook } from '../helpers/reconcile-fixtures';
import { elapse, roleContract, withHarness, type MakeHotState } from './hot-state.fixtures';

// RetrySchedule: leased claims over the retries HotWriter.apply schedules.

const LEASE = 30_000;
const entry = (id: string, dueAt: number, data = `data:${id}`): RetryEntry => ({ id, dueAt, data });

export const retriesContract = (name: string, make: MakeHotState<HotWriter & RetrySchedule>): void =>
  roleContract('retries (leased claims)', name, make, (ctx) => {
    it('renews only leases still at their expected due time, and never resurrects an acked one', async () => {
      const { state, clock } = ctx.h();
      const t = clock.now();
      await state.apply({ retries: [entry('wh_run', t + LEASE), entry('wh_moved', t + 5), entry('wh_done', t + LEASE)] });
      await state.ackRetries([{ id: 'wh_done', leaseDueAt: t + LEASE }]);
      const n = await state.renewLeases([
        { id: 'wh_run', from: t + LEASE, to: t + 2 * LEASE },
        { id: 'wh_moved', from: t + LEASE, to: t + 2 * LEASE },
        { id: 'wh_done', from: t + LEASE, to: t + 2 * LEASE },
      ]);
      expect(n).toBe(1);
      expect(await state.retryCount()).toBe(2);
      // Not due at the old lease time any more; due at the renewed one.
      expect((await state.claimDueRetries(t + LEASE, 10, 10 * LEASE)).map((r) => r.id)).toEqual(['wh_moved']);
      expect((await state.claimDueRetries(t + 2 * LEASE, 10, LEASE)).map((r) => r.id)).toEqual(['wh_run']);
    });

    it('applies made at once take effect in call order (an adapter may send them together)', async () => {
      const { state, clock } = ctx.h();
      const t = clock.now();
      await state.apply({ retries: [entry('wh_a', t - 10), entry('wh_b', t - 10)] });
      // Not awaited one by one: a writer that merges concurrent applies must keep their order.
      await Promise.all([
        state.apply({ ended: ['wh_a'] }),
        state.apply({ retries: [entry('wh_a', t - 5, 'again')] }),
        state.apply({ retries: [entry('wh_c', t - 1)] }),
        state.apply({ ended: ['wh_b', 'wh_c'] }),
      ]);
      expect(await state.claimDueRetries(t, 10, LEASE)).toEqual([entry('wh_a', t + LEASE, 'again')]);
    });

    it('counts scheduled retries; scheduling an id again replaces it', async () => {
      const { state, clock } = ctx.h();
      const t = clock.now();
      await state.apply({ retries: [entry('wh_1', t - 10), entry('wh_2', t - 5)] });
      await state.apply({ retries: [entry('wh_1', t - 1, 'v2')] });
      expect(await state.retryCount()).toBe(2);
      const got = await state.claimDueRetries(t, 10, LEASE);
      expect(got).toEqual([entry('wh_2', t + LEASE), entry('wh_1', t + LEASE, 'v2')]);
    });

    it("never lets a copy of a pass made already take the place of a later pass's retry; the same or a later pass replaces it", async () => {
      const { state, clock } = ctx.h();
      const t = clock.now();
      const pass = (attempt: number, deferrals = 0) => encodeWebhook(hook('wh_p', { attempt, deferrals }));
      // Attempt 3's outcome: the 4th try. Then a late write of a copy of the 3rd pass (a lease or
      // park of a worker that consumed it again): claimed, it would come back as the made pass.
      await state.apply({ retries: [entry('wh_p', t - 10, pass(3))] });
      await state.apply({ retries: [entry('wh_p', t - 20, pass(2))] });
      await state.apply({ retries: [entry('wh_p', t - 20, pass(1, 1))] });
      // Read from the fields before the payload, with or without deferrals (a payload's own "attempt" is not the pass).
      const trap = encodeWebhook(hook('wh_p', { attempt: 2, deferrals: undefined, payload: '{"x":1,"attempt":9,"max_attempts":9,"deferrals":9,"created_at":1}' }));
      await state.apply({ retries: [entry('wh_p', t - 20, trap)] });
      expect(await state.claimDueRetries(t, 10, LEASE)).toEqual([entry('wh_p', t + LEASE, pass(3))]);
      // The same pass (a park, a lease of it) and a later one (its outcome) replace it.
      await state.apply({ retries: [entry('wh_p', t - 5, pass(2, 1))] });
      expect(await state.claimDueRetries(t, 10, LEASE)).toEqual([entry('wh_p', t + LEASE, pass(2, 1))]);
      await state.apply({ retries: [entry('wh_p', t - 1, pass(4))] });
      expect(await state.claimDueRetries(t, 10, LEASE)).toEqual([entry('wh_p', t + LEASE, pass(4))]);
      // Once acked (or ended), any pass may be scheduled again.
      await state.ackRetries([{ id: 'wh_p', leaseDueAt: t + LEASE }]);
      await state.apply({ retries: [entry('wh_p', t - 1, pass(0))] });
      expect(await state.claimDueRetries(t, 10, LEASE)).toEqual([entry('wh_p', t + LEASE, pass(0))]);
    });

    it('claims only due retries, in due order within a shard, up to the limit, leasing each to now + lease', async () => {
      // Due order holds within a shard (across shards each gets its share: hot-state.contract-shards.ts).
      await withHarness(ctx, { ttls: { retry_shards: 1 } }, async ({ state, clock }) => {
        const t = clock.now();
        await state.apply({ retries: [entry('wh_c', t - 1_000), entry('wh_late', t + 60_000), entry('wh_a', t - 3_000), entry('wh_b', t - 2_000), entry('wh_now', t)] });
        expect(await state.claimDueRetries(t, 0, LEASE)).toEqual([]);
        const first = await state.claimDueRetries(t, 2, LEASE);
        expect(first).toEqual([entry('wh_a', t + LEASE), entry('wh_b', t + LEASE)]);
        const second = await state.claimDueRetries(t, 10, LEASE);
        expect(second.map((r) => r.id)).toEqual(['wh_c', 'wh_now']);
        expect(await state.retryCount()).toBe(5);
      });
    });

    it('keeps a claimed retry out of reach until its lease passes, then hands it out again', async () => {
      const { state, clock } = ctx.h();
      const t = clock.now();
      await state.apply({ retries: [entry('wh_1', t - 1)] });
      const [claimed] = await state.claimDueRetries(t, 10, LEASE);
      expect(claimed?.dueAt).toBe(t + LEASE);
      expect(await state.claimDueRetries(t + LEASE - 1, 10, LEASE)).toEqual([]);
      // The claimer died without acking: the retry comes back.
      expect(await state.claimDueRetries(t + LEASE, 10, LEASE)).toEqual([entry('wh_1', t + 2 * LEASE)]);
    });

    it('acks remove a retry only while it still carries the acked lease', async () => {
      const { state, clock } = ctx.h();
      const t = clock.now();
      await state.apply({ retries: [entry('wh_1', t - 2), entry('wh_2', t - 1)] });
      const claimed = await state.claimDueRetries(t, 10, LEASE);
      await state.ackRetries([
        { id: 'wh_1', leaseDueAt: t + LEASE },
        { id: 'wh_2', leaseDueAt: t + LEASE - 1 },
        { id: 'wh_none', leaseDueAt: t + LEASE },
      ]);
      expect(claimed).toHaveLength(2);
      expect(await state.retryCount()).toBe(1);
      expect((await state.claimDueRetries(t + LEASE, 10, LEASE)).map((r) => r.id)).toEqual(['wh_2']);
      await state.ackRetries([]);
    });

    it('keeps a retry rescheduled between claim and ack', async () => {
      const { state, clock } = ctx.h();
      const t = clock.now();
      await state.apply({ retries: [entry('wh_1', t - 1, 'attempt-1')] });
      const [claimed] = await state.claimDueRetries(t, 10, LEASE);
      // A worker delivered the re-enqueued copy, failed again and scheduled the next retry.
      await state.apply({ retries: [entry('wh_1', t + 5_000, 'attempt-2')] });
      await state.ackRetries([{ id: 'wh_1', leaseDueAt: claimed!.dueAt }]);
      expect(await state.retryCount()).toBe(1);
      expect(await state.claimDueRetries(t + 5_000, 10, LEASE)).toEqual([entry('wh_1', t + 5_000 + LEASE, 'attempt-2')]);
    });

    it('skips retries whose data has expired, without counting them towards the limit', async () => {
      await withHarness(ctx, { ttls: { retry_data_ttl: 300 } }, async ({ state, clock }) => {
        const t = clock.now();
        await state.apply({ retries: [entry('wh_old1', t - 3), entry('wh_old2', t - 2)] });
        await elapse(clock, 450);
        const t2 = clock.now();
        await state.apply({ retries: [entry('wh_new', t - 1)] });
        expect(await state.claimDueRetries(t2, 1, LEASE)).toEqual([entry('wh_new', t2 + LEASE)]);
      });
    });

    it('never hands the same retry to two concurrent claimers', async () => {
      const { state, peer = state, clock } = ctx.h();
      const t = clock.now();
      const ids = Array.from({ length: 200 }, (_, i) => `wh_race_${String(i).padStart(3, '0')}`);
      await state.apply({ retries: ids.map((id, i) => entry(id, t - 1_000 + (i % 50))) });
      const drain = async (s: typeof state) => {
        const mine: string[] = [];
        for (;;) {
          const got = await s.claimDueRetries(t, 7, LEASE);
          if (!got.length) return mine;
          mine.push(...got.map((r) => r.id));
        }
      };
      // Several loops on each client, so claims really overlap in flight.
      const claimers = [state, peer, state, peer, state, peer].map(drain);
      const all = (await Promise.all(claimers)).flat();
      expect(all).toHaveLength(ids.length);
      expect(new Set(all).size).toBe(ids.length);
      expect(await state.claimDueRetries(t, 500, LEASE)).toEqual([]);
    });
  });
