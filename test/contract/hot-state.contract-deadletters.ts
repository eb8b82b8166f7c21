import { expect, it } from 'vitest';
import { webhookId } from '../../core/domain/ids';
import type { DeadLetterStore } from '../../core/ports/hot-state';
import type { DeadLetterEntry } from '../../core/ports/recovery';
import { pageAll, webhookIds } from '../helpers/paging';
import { elapse, roleContract, withHarness, type MakeHotState } from './hot-state.fixtures';

// DeadLetterStore: the latest dead letter per webhook, listed per config (and reason) oldest first.

const dl = (id: string, deadAtMs: number, reasonType = 'exhausted', configId = 'cfg_contract'): DeadLetterEntry => ({
  webhookId: id,
  configId,
  reasonType,
  deadAtMs,
  record: JSON.stringify({ webhook_id: id, config_id: configId, reason_type: reasonType, dead_at: new Date(deadAtMs).toISOString() }),
});

export const deadLettersContract = (name: string, make: MakeHotState<DeadLetterStore>): void =>
  roleContract('dead letters', name, make, (ctx) => {
    it('lists a config oldest first from `since`, paging with cursors', async () => {
      const { state, clock } = ctx.h();
      const t = clock.now();
      const all = webhookIds(7);
      await state.putDeadLetters(all.map((id, i) => dl(id, t - 10_000 + i * 1000)));
      await state.putDeadLetters([dl(webhookId(), t, 'exhausted', 'other')]);
      const pages = await pageAll((cursor) => state.listDeadLetters({ configId: 'cfg_contract', limit: 3, ...(cursor ? { cursor } : {}) }));
      expect(pages.flat().map((r) => JSON.parse(r).webhook_id)).toEqual(all);
      const since = await state.listDeadLetters({ configId: 'cfg_contract', since: t - 10_000 + 4000, limit: 10 });
      expect(since.items.map((r) => JSON.parse(r).webhook_id)).toEqual(all.slice(4));
      expect(since.next).toBeNull();
    });

    it('keeps the latest dead letter of a webhook: a redelivered older one is ignored, a later death moves it', async () => {
      const { state, clock } = ctx.h();
      const t = clock.now();
      const [a, b] = webhookIds(2) as [string, string];
      await state.putDeadLetters([dl(a, t - 5000, 'unrecoverable'), dl(b, t - 4000)]);
      await state.putDeadLetters([dl(a, t - 6000, 'exhausted')]);
      expect(JSON.parse((await state.getDeadLetter(a))!).reason_type).toBe('unrecoverable');
      await state.putDeadLetters([dl(a, t - 1000, 'exhausted')]);
      const list = async (reasonType?: string) =>
        (await state.listDeadLetters({ configId: 'cfg_contract', limit: 10, ...(reasonType ? { reasonType } : {}) })).items.map((r) => JSON.parse(r).webhook_id);
      expect(await list()).toEqual([b, a]);
      expect(await list('exhausted')).toEqual([b, a]);
      expect(await list('unrecoverable')).toEqual([]);
      expect(await state.getDeadLetter('wh_none')).toBeNull();
    });

    it('forgets dead letters after deadletter_ttl', async () => {
      await withHarness(ctx, { ttls: { deadletter_ttl: 300 } }, async ({ state, clock }) => {
        const [a] = webhookIds(1) as [string];
        await state.putDeadLetters([dl(a, clock.now())]);
        expect(await state.getDeadLetter(a)).not.toBeNull();
        await elapse(clock, 450);
        expect(await state.getDeadLetter(a)).toBeNull();
        expect((await state.listDeadLetters({ configId: 'cfg_contract', limit: 10 })).items).toEqual([]);
      });
    });
  });
