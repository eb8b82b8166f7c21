import { expect, it } from 'vitest';
import { webhookId } from '../../core/domain/ids';
import type { WebhookStatus } from '../../core/domain/status';
import type { HotWriter, WebhookListing } from '../../core/ports/hot-state';
import { pageAll, webhookIds } from '../helpers/paging';
import { ns, roleContract, statusOf, type MakeHotState } from './hot-state.fixtures';

// WebhookListing: pages of a config's webhooks, whose indexes follow every status write.

const T = 1_750_000_000_000;

const write = (state: HotWriter, statuses: WebhookStatus[]) => state.apply({ statuses: statuses.map((status) => ({ status })) });

export const listingContract = (name: string, make: MakeHotState<HotWriter & WebhookListing>): void =>
  roleContract('webhook listing', name, make, (ctx) => {
    it('pages a config newest first, each webhook exactly once, ending with a null cursor', async () => {
      const { state } = ctx.h();
      const all = webhookIds(23);
      await write(
        state,
        all.map((id, i) => statusOf(id, ns(T, i))),
      );
      await write(state, [statusOf(webhookId(), ns(T), { config_id: 'other' })]);
      const pages = await pageAll((cursor) => state.listWebhooks({ configId: 'cfg_contract', limit: 10, ...(cursor ? { cursor } : {}) }));
      expect(pages.map((p) => p.length)).toEqual([10, 10, 3]);
      expect(pages.flat().map((s) => s.webhook_id)).toEqual([...all].reverse());
    });

    it('a page that exactly fills the last items still ends', async () => {
      const { state } = ctx.h();
      await write(
        state,
        webhookIds(10).map((id) => statusOf(id, ns(T))),
      );
      const pages = await pageAll((cursor) => state.listWebhooks({ configId: 'cfg_contract', limit: 5, ...(cursor ? { cursor } : {}) }));
      expect(pages.flat()).toHaveLength(10);
      expect(pages.at(-1)!.length).toBeLessThanOrEqual(5);
    });

    it('filters by state as it is now, following every status change', async () => {
      const { state } = ctx.h();
      const [a, b, c] = webhookIds(3) as [string, string, string];
      await write(state, [statusOf(a, ns(T, 1), { state: 'pending' }), statusOf(b, ns(T, 1), { state: 'pending' }), statusOf(c, ns(T, 1), { state: 'pending' })]);
      await write(state, [statusOf(a, ns(T, 2), { state: 'retrying' }), statusOf(b, ns(T, 2), { state: 'delivered' })]);
      // A stale write changes nothing, listing included.
      await write(state, [statusOf(b, ns(T, 0), { state: 'failed' })]);
      const list = async (st: string) => (await state.listWebhooks({ configId: 'cfg_contract', state: st, limit: 50 })).items.map((s) => s.webhook_id);
      expect(await list('pending')).toEqual([c]);
      expect(await list('retrying')).toEqual([a]);
      expect(await list('delivered')).toEqual([b]);
      expect(await list('failed')).toEqual([]);
    });

    it('follows a patch of a held webhook that does not name its config', async () => {
      const { state } = ctx.h();
      const [a] = webhookIds(1) as [string];
      await write(state, [statusOf(a, ns(T, 1), { state: 'pending' })]);
      await state.apply({ statuses: [{ status: { webhook_id: a, updated_at_ns: ns(T, 2), state: 'retrying', held: 'circuit_open' }, patch: true }] });
      const got = await state.listWebhooks({ configId: 'cfg_contract', state: 'retrying', limit: 5 });
      expect(got.items.map((s) => [s.webhook_id, s.held])).toEqual([[a, 'circuit_open']]);
      expect((await state.listWebhooks({ configId: 'cfg_contract', state: 'pending', limit: 5 })).items).toEqual([]);
    });

    it('filters by endpoint, and by endpoint and state together', async () => {
      const { state } = ctx.h();
      const all = webhookIds(12);
      await write(
        state,
        all.map((id, i) => statusOf(id, ns(T, i), { endpoint_hash: i % 3 === 0 ? 'e0' : 'e1', state: i % 2 === 0 ? 'delivered' : 'retrying' })),
      );
      const ep = await pageAll((cursor) => state.listWebhooks({ configId: 'cfg_contract', endpointHash: 'e0', limit: 2, ...(cursor ? { cursor } : {}) }));
      expect(ep.flat().map((s) => s.webhook_id)).toEqual(all.filter((_, i) => i % 3 === 0).reverse());
      const both = await pageAll((cursor) => state.listWebhooks({ configId: 'cfg_contract', endpointHash: 'e0', state: 'delivered', limit: 1, ...(cursor ? { cursor } : {}) }));
      expect(both.flat().map((s) => s.webhook_id)).toEqual(all.filter((_, i) => i % 6 === 0).reverse());
    });

    it('one batch spanning configs and endpoints lists each webhook under its own config, endpoint and state', async () => {
      const { state } = ctx.h();
      const all = webhookIds(12);
      const cfg = (i: number) => `cfg_mix_${i % 3}`;
      const ep = (i: number) => (i % 2 ? 'e1' : 'e0');
      const at = (i: number, seq: number, st: WebhookStatus['state']) => statusOf(all[i]!, ns(T, seq), { config_id: cfg(i), endpoint_hash: ep(i), state: st });
      await write(
        state,
        all.map((_, i) => at(i, 1, 'pending')),
      );
      // The outcomes, interleaved with a patch that names no config, all in one batch.
      await state.apply({
        statuses: [
          ...all.map((_, i) => ({ status: at(i, 2, i % 4 === 0 ? 'delivered' : 'retrying') })),
          { status: { webhook_id: all[1]!, updated_at_ns: ns(T, 3), state: 'pending' as const, held: 'paused' as const }, patch: true },
        ],
      });
      const list = async (configId: string, q: { state?: string; endpointHash?: string } = {}) =>
        (await state.listWebhooks({ configId, limit: 50, ...q })).items.map((s) => s.webhook_id).sort();
      const expected = (f: (i: number) => boolean) => all.filter((_, i) => f(i)).sort();
      const now = (i: number) => (i === 1 ? 'pending' : i % 4 === 0 ? 'delivered' : 'retrying');
      for (const c of [0, 1, 2]) {
        expect(await list(`cfg_mix_${c}`)).toEqual(expected((i) => i % 3 === c));
        for (const e of ['e0', 'e1']) expect(await list(`cfg_mix_${c}`, { endpointHash: e })).toEqual(expected((i) => i % 3 === c && ep(i) === e));
        for (const st of ['pending', 'retrying', 'delivered']) expect(await list(`cfg_mix_${c}`, { state: st })).toEqual(expected((i) => i % 3 === c && now(i) === st));
      }
    });

    it('answers an empty page with a null cursor for an unknown config', async () => {
      expect(await ctx.h().state.listWebhooks({ configId: 'nobody', limit: 10 })).toEqual({ items: [], next: null });
    });
  });
