import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import type { EndedLookup } from '../../core/ports/hot-state';
import { redisEndedLookup } from '../../workers/redis/ended-lookup';
import { RedisHotState } from '../../workers/redis/hot-state';
import { uniq } from '../helpers/env';
import { countRedisTrips } from '../helpers/redis-trips';
import { DEFAULT_TTLS, ns, statusOf } from './hot-state.fixtures';

// What a partition's next owner learns of the webhooks it may have consumed before
// (workers/redis/ended-lookup.ts): the attempt count of those whose stored status ended, and
// the sent marks, read where the statuses are. On one Redis and on a Redis Cluster alike.

type Lookup = Required<Pick<EndedLookup, 'lookup' | 'markSent'>>;

export const endedLookupContract = (name: string, client: () => Redis, opts: { oneCall: boolean }) =>
  describe(`ended-status lookup (${name})`, () => {
    const setUp = async () => {
      const state = new RedisHotState(client(), DEFAULT_TTLS);
      const ended = redisEndedLookup(client(), 60_000) as Lookup;
      const id = (what: string) => uniq(`wh_ended_${what}`);
      return { state, ended, id };
    };

    it('names the webhooks whose status ended, with their attempt count, and no other', async () => {
      const { state, ended, id } = await setUp();
      const ids = { delivered: id('delivered'), exhausted: id('exhausted'), failed: id('failed'), pending: id('pending'), retrying: id('retrying'), none: id('none') };
      const t = ns(Date.now());
      await state.apply({
        statuses: [
          { status: statusOf(ids.delivered, t, { state: 'delivered', attempts: 3 }) },
          { status: statusOf(ids.exhausted, t, { state: 'exhausted', attempts: 12 }) },
          { status: statusOf(ids.failed, t, { state: 'failed', attempts: 1 }) },
          { status: statusOf(ids.pending, t) },
          // A text that looks like an ended status, inside a field a receiver's answer fills.
          { status: statusOf(ids.retrying, t, { state: 'retrying', attempts: 2, last_error: 'body {"state":"delivered","attempts":99}' }) },
        ],
      });
      const { ended: found, sent } = await ended.lookup(Object.values(ids));
      expect(Object.fromEntries(found)).toEqual({ [ids.delivered]: 3, [ids.exhausted]: 12, [ids.failed]: 1 });
      expect(sent.size).toBe(0);
    });

    it('reads a status merged by a patch (re-encoded by the script) as it reads a whole one', async () => {
      const { state, ended, id } = await setUp();
      const [done, held] = [id('patched_done'), id('patched_held')];
      const t = Date.now();
      await state.apply({
        statuses: [{ status: statusOf(done, ns(t), { state: 'exhausted', attempts: 5, held: 'paused' }) }, { status: statusOf(held, ns(t), { state: 'retrying', attempts: 2 }) }],
      });
      await state.apply({
        statuses: [
          { status: { webhook_id: done, updated_at_ns: ns(t + 1), held: null }, patch: true },
          { status: { webhook_id: held, updated_at_ns: ns(t + 1), held: 'paused' }, patch: true },
        ],
      });
      expect(Object.fromEntries((await ended.lookup([done, held])).ended)).toEqual({ [done]: 5 });
    });

    it('finds the sent marks written after a 2xx, with or without a status', async () => {
      const { state, ended, id } = await setUp();
      const [withStatus, alone] = [id('marked'), id('marked_alone')];
      await state.apply({ statuses: [{ status: statusOf(withStatus, ns(Date.now()), { state: 'pending' }) }] });
      const mark = { pass: 2, status: 204, at: 1_700_000_000_123, durationMs: 41 };
      await ended.markSent([
        { id: withStatus, mark },
        { id: alone, mark: { ...mark, pass: 0 } },
      ]);
      const { ended: found, sent } = await ended.lookup([withStatus, alone, id('unmarked')]);
      expect(found.size).toBe(0);
      expect(Object.fromEntries(sent)).toEqual({ [withStatus]: mark, [alone]: { ...mark, pass: 0 } });
    });

    if (opts.oneCall)
      it('looks a batch up in one command whose answer is a few bytes per webhook, not the statuses', async () => {
        const { state, ended, id } = await setUp();
        const ids = Array.from({ length: 200 }, (_, i) => id(`batch_${i}`));
        const t = ns(Date.now());
        await state.apply({ statuses: ids.map((w, i) => ({ status: statusOf(w, t, { state: i % 2 ? 'delivered' : 'pending', attempts: 1 }) })) });
        const c = client() as unknown as { stream: NodeJS.EventEmitter };
        await ended.lookup(ids.slice(0, 1)); // the script loaded (its first call may be sent twice)
        let bytes = 0;
        const count = (b: Buffer) => (bytes += b.length);
        c.stream.on('data', count);
        let found = 0;
        const n = await countRedisTrips(client(), async () => {
          found = (await ended.lookup(ids)).ended.size;
        });
        c.stream.off('data', count);
        expect(found).toBe(100);
        expect(n).toMatchObject({ trips: 1, commands: 1 });
        // Each status is about 350 bytes; the answer carries its attempt count and mark only.
        expect(bytes / ids.length).toBeLessThan(16);
      });

    if (opts.oneCall)
      it('writes the marks waiting together in one command', async () => {
        const { ended, id } = await setUp();
        const marks = Array.from({ length: 50 }, (_, i) => ({ id: id(`many_${i}`), mark: { pass: 0, status: 200, at: 1_700_000_000_000 + i, durationMs: 5 } }));
        await ended.markSent(marks.slice(0, 1)); // the script loaded
        const n = await countRedisTrips(client(), () => Promise.all(marks.map((m) => ended.markSent([m]))));
        expect(n).toMatchObject({ trips: 1, commands: 1 });
        expect((await ended.lookup(marks.map((m) => m.id))).sent.size).toBe(50);
      });
  });
