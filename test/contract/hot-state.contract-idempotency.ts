import { expect, it } from 'vitest';
import type { IdempotencyStore } from '../../core/ports/hot-state';
import { elapse, roleContract, type MakeHotState } from './hot-state.fixtures';

// IdempotencyStore: one webhook per (config, key) until the claim expires or is given back.

export const idempotencyContract = (name: string, make: MakeHotState<IdempotencyStore>): void =>
  roleContract('idempotency', name, make, (ctx) => {
    const TTL = 60_000;

    it('gives each key to its first claimer and answers later claimers with that id', async () => {
      const { state } = ctx.h();
      expect(await state.claimIdempotency([{ configId: 'cfg', key: 'a', webhookId: 'wh_1' }], TTL)).toEqual(['wh_1']);
      const got = await state.claimIdempotency(
        [
          { configId: 'cfg', key: 'a', webhookId: 'wh_2' },
          { configId: 'cfg', key: 'b', webhookId: 'wh_3' },
          { configId: 'cfg', key: 'b', webhookId: 'wh_4' },
          { configId: 'other', key: 'a', webhookId: 'wh_5' },
        ],
        TTL,
      );
      expect(got).toEqual(['wh_1', 'wh_3', 'wh_3', 'wh_5']);
    });

    it('keeps the keys of configs apart when a config id holds ":" (tenantA:x + order-1 vs tenantA + x:order-1)', async () => {
      const { state } = ctx.h();
      const pairs = [
        [
          { configId: 'tenantA:x', key: 'order-1', webhookId: 'wh_1' },
          { configId: 'tenantA', key: 'x:order-1', webhookId: 'wh_2' },
        ],
        [
          { configId: 'a', key: '}:b', webhookId: 'wh_3' },
          { configId: 'a}:', key: 'b', webhookId: 'wh_4' },
        ],
        [
          { configId: 'wh', key: '42:k', webhookId: 'wh_5' },
          { configId: 'wh:42', key: 'k', webhookId: 'wh_6' },
        ],
      ];
      for (const [first, second] of pairs) {
        expect(await state.claimIdempotency([first!], TTL)).toEqual([first!.webhookId]);
        expect(await state.claimIdempotency([second!], TTL)).toEqual([second!.webhookId]);
        // Releasing one never frees the other.
        await state.releaseIdempotency([second!]);
        expect(await state.claimIdempotency([{ ...first!, webhookId: 'wh_late' }], TTL)).toEqual([first!.webhookId]);
      }
    });

    it('answers an empty batch with an empty list', async () => {
      expect(await ctx.h().state.claimIdempotency([], TTL)).toEqual([]);
      await expect(ctx.h().state.releaseIdempotency([])).resolves.toBeUndefined();
    });

    it('releases a key only for the webhook that holds it', async () => {
      const { state } = ctx.h();
      await state.claimIdempotency([{ configId: 'cfg', key: 'a', webhookId: 'wh_1' }], TTL);
      await state.releaseIdempotency([
        { configId: 'cfg', key: 'a', webhookId: 'wh_2' },
        { configId: 'cfg', key: 'none', webhookId: 'wh_2' },
      ]);
      expect(await state.claimIdempotency([{ configId: 'cfg', key: 'a', webhookId: 'wh_3' }], TTL)).toEqual(['wh_1']);
      await state.releaseIdempotency([{ configId: 'cfg', key: 'a', webhookId: 'wh_1' }]);
      expect(await state.claimIdempotency([{ configId: 'cfg', key: 'a', webhookId: 'wh_4' }], TTL)).toEqual(['wh_4']);
    });

    it('frees a key once its ttl has passed', async () => {
      const { state, clock } = ctx.h();
      expect(await state.claimIdempotency([{ configId: 'cfg', key: 't', webhookId: 'wh_1' }], 300)).toEqual(['wh_1']);
      expect(await state.claimIdempotency([{ configId: 'cfg', key: 't', webhookId: 'wh_2' }], 300)).toEqual(['wh_1']);
      await elapse(clock, 450);
      expect(await state.claimIdempotency([{ configId: 'cfg', key: 't', webhookId: 'wh_3' }], 300)).toEqual(['wh_3']);
    });

    it('makes a claim in flight final: its new value, living the new ttl; a key it does not hold (given back, expired) stays free', async () => {
      const { state, clock } = ctx.h();
      const inFlight = { configId: 'cfg', key: 'c', webhookId: '~wh_1 f1' };
      expect(await state.claimIdempotency([inFlight], 300)).toEqual(['~wh_1 f1']);
      await state.commitIdempotency([{ ...inFlight, from: '~wh_1 f1', webhookId: 'wh_1 f1' }], 5_000);
      await elapse(clock, 450);
      expect(await state.claimIdempotency([{ configId: 'cfg', key: 'c', webhookId: 'wh_2' }], 300)).toEqual(['wh_1 f1']);
      // Nothing is created for a key no longer held.
      await state.commitIdempotency([{ configId: 'cfg', key: 'gone', from: '~wh_3 f3', webhookId: 'wh_3 f3' }], 5_000);
      expect(await state.claimIdempotency([{ configId: 'cfg', key: 'gone', webhookId: 'wh_4' }], TTL)).toEqual(['wh_4']);
    });
  });
