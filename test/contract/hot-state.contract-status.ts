import { expect, it } from 'vitest';
import { HISTORY_LIMIT } from '../../core/domain/status';
import type { HotWriter, StatusReader } from '../../core/ports/hot-state';
import { attemptOf, elapse, ns, roleContract, statusOf, withHarness, type MakeHotState } from './hot-state.fixtures';

// Status writes (HotWriter.apply) as StatusReader reads them: last-write-wins by
// updated_at_ns, the capped history, the status TTL.

export const statusContract = (name: string, make: MakeHotState<HotWriter & StatusReader>): void =>
  roleContract('status (last-write-wins by updated_at_ns) and history', name, make, (ctx) => {
    const T = 1_750_000_000_000;

    it('returns null for an unknown webhook', async () => {
      expect(await ctx.h().state.getStatus('wh_unknown')).toBeNull();
    });

    it('stores a status and returns it with an empty history', async () => {
      const s = statusOf('wh_1', ns(T), { replay_of: 'wh_0', dead_reason: null });
      await ctx.h().state.apply({ statuses: [{ status: s }] });
      expect(await ctx.h().state.getStatus('wh_1')).toEqual({ ...s, history: [] });
    });

    it('lets a newer stamp replace the status and never an older or equal one', async () => {
      const { state } = ctx.h();
      await state.apply({ statuses: [{ status: statusOf('wh_1', ns(T, 5), { state: 'retrying', attempts: 1 }) }] });
      await state.apply({ statuses: [{ status: statusOf('wh_1', ns(T, 9), { state: 'delivered', attempts: 2 }) }] });
      await state.apply({ statuses: [{ status: statusOf('wh_1', ns(T, 7), { state: 'failed' }) }] });
      await state.apply({ statuses: [{ status: statusOf('wh_1', ns(T, 9), { state: 'exhausted' }) }] });
      expect((await state.getStatus('wh_1'))?.state).toBe('delivered');
    });

    // Neighbouring 19-digit stamps are one double apart or the same double: a numeric
    // compare in Lua would get these wrong.
    it.each([
      ['1750000000000000001', '1750000000000000002', '1750000000000000003'],
      ['1750000000000999998', '1750000000000999999', '1750000000001000000'],
      ['9007199254740993000', '9007199254740993001', '9007199254740993002'],
    ])('compares equal-length stamps exactly (%s < %s < %s)', async (a, b, c) => {
      const { state } = ctx.h();
      await state.apply({ statuses: [{ status: statusOf('wh_1', b, { attempts: 2 }) }] });
      await state.apply({ statuses: [{ status: statusOf('wh_1', a, { attempts: 1 }) }] });
      expect((await state.getStatus('wh_1'))?.updated_at_ns).toBe(b);
      await state.apply({ statuses: [{ status: statusOf('wh_1', c, { attempts: 3 }) }] });
      expect((await state.getStatus('wh_1'))?.updated_at_ns).toBe(c);
    });

    it('applies several writes of one webhook in a batch in order', async () => {
      const { state } = ctx.h();
      await state.apply({
        statuses: [
          { status: statusOf('wh_1', ns(T, 2), { state: 'delivered' }), attempt: attemptOf(0) },
          { status: statusOf('wh_1', ns(T, 1), { state: 'retrying' }), attempt: attemptOf(1) },
        ],
      });
      const got = await state.getStatus('wh_1');
      expect(got?.state).toBe('delivered');
      expect(got?.history.map((a) => a.attempt)).toEqual([0, 1]);
    });

    it('keeps the last HISTORY_LIMIT attempts in order, appending even stale writes', async () => {
      const { state } = ctx.h();
      for (let i = 0; i < HISTORY_LIMIT + 5; i++) {
        // Every third write carries an older stamp than the one stored: its attempt still counts.
        const stamp = i % 3 === 2 ? ns(T, 0) : ns(T, 100 + i);
        await state.apply({ statuses: [{ status: statusOf('wh_1', stamp, { attempts: i }), attempt: attemptOf(i) }] });
      }
      const got = await state.getStatus('wh_1');
      expect(got?.history).toHaveLength(HISTORY_LIMIT);
      expect(got?.history.map((a) => a.attempt)).toEqual(Array.from({ length: HISTORY_LIMIT }, (_, i) => i + 5));
      expect(got?.history[0]).toEqual(attemptOf(5));
      expect(got?.attempts).toBe(HISTORY_LIMIT + 5 - 1);
    });

    it('keeps the history when a write carries no attempt', async () => {
      const { state } = ctx.h();
      await state.apply({ statuses: [{ status: statusOf('wh_1', ns(T, 1)), attempt: attemptOf(0) }] });
      await state.apply({ statuses: [{ status: statusOf('wh_1', ns(T, 2), { state: 'delivered' }) }] });
      expect((await state.getStatus('wh_1'))?.history).toEqual([attemptOf(0)]);
    });

    it('writes many webhooks in one batch', async () => {
      const { state } = ctx.h();
      const ids = Array.from({ length: 50 }, (_, i) => `wh_batch_${i}`);
      await state.apply({ statuses: ids.map((id, i) => ({ status: statusOf(id, ns(T, i)), attempt: attemptOf(i) })) });
      const got = await Promise.all(ids.map((id) => state.getStatus(id)));
      expect(got.map((s) => s?.updated_at_ns)).toEqual(ids.map((_, i) => ns(T, i)));
      expect(got.map((s) => s?.history[0]?.attempt)).toEqual(ids.map((_, i) => i));
    });

    it('forgets status and history after status_ttl', async () => {
      await withHarness(ctx, { ttls: { status_ttl: 300 } }, async ({ state, clock }) => {
        await state.apply({ statuses: [{ status: statusOf('wh_ttl', ns(T)), attempt: attemptOf(0) }] });
        expect(await state.getStatus('wh_ttl')).not.toBeNull();
        await elapse(clock, 450);
        expect(await state.getStatus('wh_ttl')).toBeNull();
      });
    });
  });
