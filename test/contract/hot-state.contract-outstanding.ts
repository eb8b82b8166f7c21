import { expect, it } from 'vitest';
import { webhookId } from '../../core/domain/ids';
import type { HotWriter, OutstandingCounter, RebuildState } from '../../core/ports/hot-state';
import { ns, roleContract, statusOf, type MakeHotState } from './hot-state.fixtures';

// OutstandingCounter: a config's webhooks accepted and not yet terminal, following every
// status write (the enqueue's pending, the worker's outcomes, held patches, a rebuild).

const T = 1_750_000_000_000;

export const outstandingContract = (name: string, make: MakeHotState<HotWriter & OutstandingCounter & Pick<RebuildState, 'restore'>>): void =>
  roleContract('outstanding', name, make, (ctx) => {
    it('counts pending and retrying webhooks of the config until they end', async () => {
      const { state } = ctx.h();
      const [a, b, c, d] = [webhookId(), webhookId(), webhookId(), webhookId()];
      expect(await state.countOutstanding('cfg_contract')).toBe(0);
      await state.apply({ statuses: [a, b, c].map((id) => ({ status: statusOf(id, ns(T, 1)) })) });
      await state.apply({ statuses: [{ status: statusOf(d, ns(T, 1), { config_id: 'cfg_other' }) }] });
      expect(await state.countOutstanding('cfg_contract')).toBe(3);
      expect(await state.countOutstanding('cfg_other')).toBe(1);
      await state.apply({ statuses: [{ status: statusOf(a, ns(T, 2), { state: 'retrying' }) }, { status: statusOf(b, ns(T, 2), { state: 'delivered' }) }] });
      expect(await state.countOutstanding('cfg_contract')).toBe(2);
      // A stale write (a redelivered batch's older outcome) changes nothing.
      await state.apply({ statuses: [{ status: statusOf(b, ns(T, 1), { state: 'pending' }) }] });
      expect(await state.countOutstanding('cfg_contract')).toBe(2);
      // A held webhook's patch names no config; it still counts.
      await state.apply({ statuses: [{ status: { webhook_id: c, updated_at_ns: ns(T, 3), state: 'retrying', held: 'paused' }, patch: true }] });
      expect(await state.countOutstanding('cfg_contract')).toBe(2);
      await state.apply({ statuses: [{ status: statusOf(a, ns(T, 4), { state: 'failed' }) }, { status: statusOf(c, ns(T, 4), { state: 'exhausted' }) }] });
      expect(await state.countOutstanding('cfg_contract')).toBe(0);
    });

    it('counts what a rebuild restores', async () => {
      const { state } = ctx.h();
      const id = webhookId();
      await state.restore([{ status: statusOf(id, ns(T, 1), { state: 'retrying' }), retry: { id, dueAt: T, data: '{}' } }]);
      expect(await state.countOutstanding('cfg_contract')).toBe(1);
    });
  });
