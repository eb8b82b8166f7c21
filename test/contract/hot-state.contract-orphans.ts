import { expect, it } from 'vitest';
import type { HotWriter, RetrySchedule, StatusReader } from '../../core/ports/hot-state';
import type { OrphanRepair } from '../../core/ports/recovery';
import { ns, roleContract, statusOf, type MakeHotState } from './hot-state.fixtures';

// OrphanRepair (core/reconcile/orphans.ts): which webhooks nothing in the hot state carries,
// and a repair that schedules them without ever replacing or doubling a schedule.

const T = 1_750_000_000_000;
const NO_ENDPOINT = 'ee'.repeat(16);

export const orphansContract = (name: string, make: MakeHotState<OrphanRepair & HotWriter & StatusReader & RetrySchedule>): void =>
  roleContract('orphan repair', name, make, (ctx) => {
    it('names the webhooks with no schedule entry and no lease, with their stored status', async () => {
      const { state, clock } = ctx.h();
      const now = clock.now();
      await state.apply({
        statuses: ['wh_o1', 'wh_o2', 'wh_o3'].map((id) => ({ status: statusOf(id, ns(T, 1), { state: 'retrying' }) })),
        retries: [
          { id: 'wh_o2', dueAt: now + 60_000, data: 'd2' },
          { id: 'wh_o3', dueAt: now - 1, data: 'd3' },
        ],
      });
      // wh_o3 claimed: its lease is the entry it keeps.
      expect((await state.claimDueRetries(now, 10, 30_000)).map((r) => r.id)).toEqual(['wh_o3']);
      const bare = await state.unscheduled(
        ['wh_o1', 'wh_o2', 'wh_o3', 'wh_o4'].map((id) => ({ id, endpointHash: NO_ENDPOINT })),
        clock.now(),
      );
      expect([...bare.keys()].sort()).toEqual(['wh_o1', 'wh_o4']);
      expect(bare.get('wh_o1')?.state).toBe('retrying');
      expect(bare.get('wh_o4')).toBeNull();
    });

    it('schedules where nothing is scheduled, never replaces a schedule, and writes a missing status', async () => {
      const { state, clock } = ctx.h();
      const now = clock.now();
      await state.apply({ statuses: [{ status: statusOf('wh_o5', ns(T, 1), { state: 'retrying' }) }], retries: [{ id: 'wh_o5', dueAt: now + 60_000, data: 'd5' }] });
      await state.apply({ statuses: [{ status: statusOf('wh_o6', ns(T, 2), { state: 'retrying' }) }] });
      const repaired = await state.reschedule(
        ['wh_o5', 'wh_o6', 'wh_o7'].map((id) => ({ status: statusOf(id, ns(T, 1), { state: 'retrying' }), retry: { id, dueAt: now - 1, data: `r-${id}` } })),
      );
      expect(repaired.sort()).toEqual(['wh_o6', 'wh_o7']);
      // wh_o6 keeps its newer status; wh_o7 had none.
      expect((await state.getStatus('wh_o6'))?.updated_at_ns).toBe(ns(T, 2));
      expect((await state.getStatus('wh_o7'))?.state).toBe('retrying');
      const due = await state.claimDueRetries(clock.now(), 10, 1000);
      expect(due.map((r) => [r.id, r.data]).sort()).toEqual([
        ['wh_o6', 'r-wh_o6'],
        ['wh_o7', 'r-wh_o7'],
      ]);
      // wh_o5's schedule kept its time: not due yet.
      expect(await state.unscheduled([{ id: 'wh_o5', endpointHash: NO_ENDPOINT }], clock.now())).toEqual(new Map());
      expect(await state.reschedule([{ status: statusOf('wh_o6', ns(T, 1)), retry: { id: 'wh_o6', dueAt: now, data: 'again' } }])).toEqual([]);
    });
  });
