import { afterEach, describe, expect, it } from 'vitest';
import type { InboundReplays } from '../../core/ports/inbound-replays';

// The replay marks of signed /incoming requests (core/ports/inbound-replays.ts), the same on
// every adapter: one claim per mark while it lives, the first answer for every later copy.

export type ReplaysUnderTest = {
  store: InboundReplays;
  /** A second client of the same state (its own connection on Redis). */
  peer: InboundReplays;
  /** Lets `ms` pass for the store's expiry (a fake clock, or real time). */
  pass(ms: number): Promise<void>;
  cleanup(): Promise<void>;
};

export const inboundReplaysContract = (name: string, make: () => Promise<ReplaysUnderTest>) =>
  describe(`InboundReplays contract (${name})`, () => {
    let t: ReplaysUnderTest | undefined;
    afterEach(async () => {
      await t?.cleanup();
      t = undefined;
    });
    const answer = { status: 200, body: '{"webhooks":[{"id":"wh_1","endpoint":"http://x/"}],"count":1}' };

    it('claims a mark once; a copy sees it running, then gets the first answer', async () => {
      t = await make();
      expect(await t.store.claim('inbound_replay:{a}:m1', 60_000)).toEqual({ kind: 'claimed' });
      expect(await t.peer.claim('inbound_replay:{a}:m1', 60_000)).toEqual({ kind: 'running' });
      await t.store.answer('inbound_replay:{a}:m1', answer);
      expect(await t.peer.claim('inbound_replay:{a}:m1', 60_000)).toEqual({ kind: 'answered', answer });
      // Another mark, or the same digest under another transformer, is its own.
      expect(await t.peer.claim('inbound_replay:{b}:m1', 60_000)).toEqual({ kind: 'claimed' });
    });

    it('of many copies claiming at once, exactly one claims', async () => {
      t = await make();
      const { store, peer } = t;
      const all = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? store : peer).claim('inbound_replay:{a}:race', 60_000)));
      expect(all.filter((c) => c.kind === 'claimed')).toHaveLength(1);
      expect(all.filter((c) => c.kind === 'running')).toHaveLength(19);
    });

    it('a released claim runs again (a failed first run is not remembered)', async () => {
      t = await make();
      expect((await t.store.claim('inbound_replay:{a}:r', 60_000)).kind).toBe('claimed');
      await t.store.release('inbound_replay:{a}:r');
      expect((await t.peer.claim('inbound_replay:{a}:r', 60_000)).kind).toBe('claimed');
    });

    it('forgets a mark when its window ends, answered or not', async () => {
      t = await make();
      expect((await t.store.claim('inbound_replay:{a}:e', 150)).kind).toBe('claimed');
      await t.store.answer('inbound_replay:{a}:e', answer);
      expect((await t.peer.claim('inbound_replay:{a}:e', 150)).kind).toBe('answered');
      await t.pass(400);
      expect((await t.peer.claim('inbound_replay:{a}:e', 150)).kind).toBe('claimed');
      // An answer after the claim expired does not bring the mark back for good.
      await t.pass(400);
      await t.store.answer('inbound_replay:{a}:e', answer);
      expect((await t.store.claim('inbound_replay:{a}:e', 150)).kind).toBe('claimed');
    });
  });
