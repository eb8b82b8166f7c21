import { describe, expect, it } from 'vitest';
import { webhookId } from '../../core/domain/ids';
import type { WebhookStatus } from '../../core/domain/status';
import type { HotState } from '../../core/ports/hot-state';
import type { DeadLetterEntry } from '../../core/ports/recovery';
import { elapse, ns, statusOf, withHarness, type ContractContext } from './hot-state.fixtures';

// The recovery and listing part of the HotState contract (core/ports/recovery.ts): restore
// (last-write-wins, retries never doubled), webhook listing indexes, dead letters, canary
// and rebuild lock.

const T = 1_750_000_000_000;

const pageAll = async <T>(fetch: (cursor?: string) => Promise<{ items: T[]; next: string | null }>) => {
  const pages: T[][] = [];
  let cursor: string | undefined;
  for (let i = 0; i < 200; i++) {
    const p = await fetch(cursor);
    pages.push(p.items);
    if (p.next === null) return pages;
    cursor = p.next;
  }
  throw new Error('listing never ended');
};

const ids = (n: number) => Array.from({ length: n }, () => webhookId());

const dl = (id: string, deadAtMs: number, reasonType = 'exhausted', configId = 'cfg_contract'): DeadLetterEntry => ({
  webhookId: id,
  configId,
  reasonType,
  deadAtMs,
  record: JSON.stringify({ webhook_id: id, config_id: configId, reason_type: reasonType, dead_at: new Date(deadAtMs).toISOString() }),
});

const write = (state: HotState, statuses: WebhookStatus[]) => state.apply({ statuses: statuses.map((status) => ({ status })) });

export const recoveryContract = (ctx: ContractContext) =>
  describe('recovery and listing', () => {
    describe('restore', () => {
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

      it('a terminal outcome removes a retry still scheduled for the webhook (a stale copy), after the batch\'s own retries', async () => {
        const { state, clock } = ctx.h();
        const due = clock.now() - 1;
        await state.restore([{ status: statusOf('wh_e1', ns(T, 1)), retry: { id: 'wh_e1', dueAt: due, data: 'restored' } }]);
        await state.apply({ retries: [{ id: 'wh_e2', dueAt: due, data: 'live' }] });
        await state.apply({ statuses: [{ status: statusOf('wh_e1', ns(T, 2), { state: 'delivered' }) }], retries: [{ id: 'wh_e3', dueAt: due, data: 'x' }], ended: ['wh_e1', 'wh_e3'] });
        expect((await state.claimDueRetries(clock.now(), 10, 1000)).map((r) => r.id)).toEqual(['wh_e2']);
        await state.apply({ ended: ['wh_none'] });
      });

      it('restores statuses without a retry (dead webhooks)', async () => {
        const { state } = ctx.h();
        expect(await state.restore([{ status: statusOf('wh_d', ns(T), { state: 'exhausted' }) }])).toBe(1);
        expect(await state.retryCount()).toBe(0);
        expect(await state.restore([])).toBe(0);
      });
    });

    describe('webhook listing', () => {
      it('pages a config newest first, each webhook exactly once, ending with a null cursor', async () => {
        const { state } = ctx.h();
        const all = ids(23);
        await write(state, all.map((id, i) => statusOf(id, ns(T, i))));
        await write(state, [statusOf(webhookId(), ns(T), { config_id: 'other' })]);
        const pages = await pageAll((cursor) => state.listWebhooks({ configId: 'cfg_contract', limit: 10, ...(cursor ? { cursor } : {}) }));
        expect(pages.map((p) => p.length)).toEqual([10, 10, 3]);
        expect(pages.flat().map((s) => s.webhook_id)).toEqual([...all].reverse());
      });

      it('a page that exactly fills the last items still ends', async () => {
        const { state } = ctx.h();
        await write(state, ids(10).map((id) => statusOf(id, ns(T))));
        const pages = await pageAll((cursor) => state.listWebhooks({ configId: 'cfg_contract', limit: 5, ...(cursor ? { cursor } : {}) }));
        expect(pages.flat()).toHaveLength(10);
        expect(pages.at(-1)!.length).toBeLessThanOrEqual(5);
      });

      it('filters by state as it is now, following every status change', async () => {
        const { state } = ctx.h();
        const [a, b, c] = ids(3) as [string, string, string];
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
        const [a] = ids(1) as [string];
        await write(state, [statusOf(a, ns(T, 1), { state: 'pending' })]);
        await state.apply({ statuses: [{ status: { webhook_id: a, updated_at_ns: ns(T, 2), state: 'retrying', held: 'circuit_open' }, patch: true }] });
        const got = await state.listWebhooks({ configId: 'cfg_contract', state: 'retrying', limit: 5 });
        expect(got.items.map((s) => [s.webhook_id, s.held])).toEqual([[a, 'circuit_open']]);
        expect((await state.listWebhooks({ configId: 'cfg_contract', state: 'pending', limit: 5 })).items).toEqual([]);
      });

      it('filters by endpoint, and by endpoint and state together', async () => {
        const { state } = ctx.h();
        const all = ids(12);
        await write(state, all.map((id, i) => statusOf(id, ns(T, i), { endpoint_hash: i % 3 === 0 ? 'e0' : 'e1', state: i % 2 === 0 ? 'delivered' : 'retrying' })));
        const ep = await pageAll((cursor) => state.listWebhooks({ configId: 'cfg_contract', endpointHash: 'e0', limit: 2, ...(cursor ? { cursor } : {}) }));
        expect(ep.flat().map((s) => s.webhook_id)).toEqual(all.filter((_, i) => i % 3 === 0).reverse());
        const both = await pageAll((cursor) => state.listWebhooks({ configId: 'cfg_contract', endpointHash: 'e0', state: 'delivered', limit: 1, ...(cursor ? { cursor } : {}) }));
        expect(both.flat().map((s) => s.webhook_id)).toEqual(all.filter((_, i) => i % 6 === 0).reverse());
      });

      it('lists restored statuses too', async () => {
        const { state } = ctx.h();
        const [a] = ids(1) as [string];
        await state.restore([{ status: statusOf(a, ns(T), { state: 'retrying' }) }]);
        expect((await state.listWebhooks({ configId: 'cfg_contract', state: 'retrying', limit: 5 })).items.map((s) => s.webhook_id)).toEqual([a]);
      });

      it('answers an empty page with a null cursor for an unknown config', async () => {
        expect(await ctx.h().state.listWebhooks({ configId: 'nobody', limit: 10 })).toEqual({ items: [], next: null });
      });
    });

    describe('dead letters', () => {
      it('lists a config oldest first from `since`, paging with cursors', async () => {
        const { state, clock } = ctx.h();
        const t = clock.now();
        const all = ids(7);
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
        const [a, b] = ids(2) as [string, string];
        await state.putDeadLetters([dl(a, t - 5000, 'unrecoverable'), dl(b, t - 4000)]);
        await state.putDeadLetters([dl(a, t - 6000, 'exhausted')]);
        expect(JSON.parse((await state.getDeadLetter(a))!).reason_type).toBe('unrecoverable');
        await state.putDeadLetters([dl(a, t - 1000, 'exhausted')]);
        const list = async (reasonType?: string) => (await state.listDeadLetters({ configId: 'cfg_contract', limit: 10, ...(reasonType ? { reasonType } : {}) })).items.map((r) => JSON.parse(r).webhook_id);
        expect(await list()).toEqual([b, a]);
        expect(await list('exhausted')).toEqual([b, a]);
        expect(await list('unrecoverable')).toEqual([]);
        expect(await state.getDeadLetter('wh_none')).toBeNull();
      });

      it('forgets dead letters after deadletter_ttl', async () => {
        await withHarness(ctx, { ttls: { deadletter_ttl: 300 } }, async ({ state, clock }) => {
          const [a] = ids(1) as [string];
          await state.putDeadLetters([dl(a, clock.now())]);
          expect(await state.getDeadLetter(a)).not.toBeNull();
          await elapse(clock, 450);
          expect(await state.getDeadLetter(a)).toBeNull();
          expect((await state.listDeadLetters({ configId: 'cfg_contract', limit: 10 })).items).toEqual([]);
        });
      });
    });

    describe('canary and rebuild lock', () => {
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
  });
