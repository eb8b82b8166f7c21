import { expect, it } from 'vitest';
import { webhookId } from '../../core/domain/ids';
import type { WebhookStatus } from '../../core/domain/status';
import type { HotWriter, RebuildState, RetrySchedule, StatusReader, WebhookListing } from '../../core/ports/hot-state';
import { elapse, ns, roleContract, statusOf, type MakeHotState } from './hot-state.fixtures';

// RebuildState (docs/RELIABILITY.md, Redis loss): restore (last-write-wins, retries never
// doubled, seen by every reader), the canary and the rebuild lock.

const T = 1_750_000_000_000;

const ids = (n: number) => Array.from({ length: n }, () => webhookId());

const write = (state: HotWriter, statuses: WebhookStatus[]) => state.apply({ statuses: statuses.map((status) => ({ status })) });

/** `listing: false`: an adapter that keeps no listing indexes (Redis Cluster) is not asked to list what it restored. */
export const rebuildContract = (
  name: string,
  make: MakeHotState<RebuildState & HotWriter & StatusReader & RetrySchedule & WebhookListing>,
  opts: { listing?: boolean } = {},
): void =>
  roleContract('rebuild (restore, canary, lock)', name, make, (ctx) => {
    it('writes a status where none is stored, with its retry; counts what it wrote', async () => {
      const { state, clock } = ctx.h();
      const due = clock.now() - 1;
      const n = await state.restore([{ status: statusOf('wh_r1', ns(T, 1), { state: 'retrying' }), retry: { id: 'wh_r1', dueAt: due, data: 'd1' } }]);
      expect(n).toBe(1);
      expect((await state.getStatus('wh_r1'))?.state).toBe('retrying');
      const now = clock.now();
      expect(await state.claimDueRetries(now, 10, 1000)).toEqual([{ id: 'wh_r1', dueAt: now + 1000, data: 'd1' }]);
    });

    it('never replaces a status as new or newer, and then leaves its schedule alone', async () => {
      const { state, clock } = ctx.h();
      await write(state, [statusOf('wh_r1', ns(T, 5), { state: 'delivered' })]);
      const n = await state.restore([
        { status: statusOf('wh_r1', ns(T, 4), { state: 'retrying' }), retry: { id: 'wh_r1', dueAt: clock.now() - 1, data: 'old' } },
        { status: statusOf('wh_r1', ns(T, 5), { state: 'retrying' }), retry: { id: 'wh_r1', dueAt: clock.now() - 1, data: 'same' } },
      ]);
      expect(n).toBe(0);
      expect((await state.getStatus('wh_r1'))?.state).toBe('delivered');
      expect(await state.retryCount()).toBe(0);
    });

    it('restores an older status than nothing, but never doubles or replaces a scheduled retry', async () => {
      const { state, clock } = ctx.h();
      const live = clock.now() + 60_000;
      await state.apply({ retries: [{ id: 'wh_r1', dueAt: live, data: 'live' }] });
      expect(await state.restore([{ status: statusOf('wh_r1', ns(T, 1)), retry: { id: 'wh_r1', dueAt: clock.now() - 1, data: 'replayed' } }])).toBe(1);
      expect(await state.retryCount()).toBe(1);
      expect(await state.claimDueRetries(clock.now(), 10, 1000)).toEqual([]);
      expect(await state.claimDueRetries(live, 10, 1000)).toEqual([{ id: 'wh_r1', dueAt: live + 1000, data: 'live' }]);
    });

    it("a terminal outcome removes a retry still scheduled for the webhook (a stale copy), after the batch's own retries", async () => {
      const { state, clock } = ctx.h();
      const due = clock.now() - 1;
      await state.restore([{ status: statusOf('wh_e1', ns(T, 1)), retry: { id: 'wh_e1', dueAt: due, data: 'restored' } }]);
      await state.apply({ retries: [{ id: 'wh_e2', dueAt: due, data: 'live' }] });
      await state.apply({
        statuses: [{ status: statusOf('wh_e1', ns(T, 2), { state: 'delivered' }) }],
        retries: [{ id: 'wh_e3', dueAt: due, data: 'x' }],
        ended: ['wh_e1', 'wh_e3'],
      });
      expect((await state.claimDueRetries(clock.now(), 10, 1000)).map((r) => r.id)).toEqual(['wh_e2']);
      await state.apply({ ended: ['wh_none'] });
    });

    it('restores statuses without a retry (dead webhooks)', async () => {
      const { state } = ctx.h();
      expect(await state.restore([{ status: statusOf('wh_d', ns(T), { state: 'exhausted' }) }])).toBe(1);
      expect(await state.retryCount()).toBe(0);
      expect(await state.restore([])).toBe(0);
    });

    if (opts.listing !== false)
      it('lists restored statuses too', async () => {
        const { state } = ctx.h();
        const [a] = ids(1) as [string];
        await state.restore([{ status: statusOf(a, ns(T), { state: 'retrying' }) }]);
        expect((await state.listWebhooks({ configId: 'cfg_contract', state: 'retrying', limit: 5 })).items.map((s) => s.webhook_id)).toEqual([a]);
      });

    it('the canary is absent until set', async () => {
      const { state } = ctx.h();
      expect(await state.isInitialized()).toBe(false);
      await state.markInitialized('{"by":"test"}');
      expect(await state.isInitialized()).toBe(true);
    });

    it('one owner at a time; only the owner renews or releases', async () => {
      const { state } = ctx.h();
      expect(await state.acquireLock('a', 60_000)).toBe(true);
      expect(await state.acquireLock('b', 60_000)).toBe(false);
      expect(await state.renewLock('b', 60_000)).toBe(false);
      await state.releaseLock('b');
      expect(await state.acquireLock('b', 60_000)).toBe(false);
      expect(await state.renewLock('a', 60_000)).toBe(true);
      await state.releaseLock('a');
      expect(await state.acquireLock('b', 60_000)).toBe(true);
    });

    it('a lock whose holder stopped renewing expires', async () => {
      const { state, clock } = ctx.h();
      expect(await state.acquireLock('a', 300)).toBe(true);
      await elapse(clock, 450);
      expect(await state.renewLock('a', 300)).toBe(false);
      expect(await state.acquireLock('b', 300)).toBe(true);
    });
  });
