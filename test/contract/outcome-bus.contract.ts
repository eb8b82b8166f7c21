import { afterEach, describe, expect, it } from 'vitest';
import type { FirstOutcome, OutcomeBus } from '../../core/ports/outcome-bus';
import { uniq, waitFor } from '../helpers/env';

// OutcomeBus (core/ports/outcome-bus.ts): a batch published to a listener reaches every
// subscriber of that listener, whole and once, and no other; nothing after close.

const outcome = (id: string): FirstOutcome => ({
  webhook_id: id,
  status: 'retrying',
  attempts: 1,
  status_code: 503,
  error: 'HTTP 503',
  next_retry_at: '2026-01-01T00:00:10.000Z',
  dead_reason: null,
});

export const outcomeBusContract = (name: string, make: () => { publisher: OutcomeBus; subscriber: OutcomeBus }) =>
  describe(`outcome bus contract: ${name}`, () => {
    const closers: (() => Promise<void>)[] = [];
    afterEach(async () => {
      for (const c of closers.splice(0)) await c();
    });

    it("delivers a listener's batches whole, in order, to it alone", async () => {
      const { publisher, subscriber } = make();
      const [l1, l2] = [uniq('l1'), uniq('l2')];
      const got1: FirstOutcome[][] = [];
      const got2: FirstOutcome[][] = [];
      closers.push((await subscriber.subscribe(l1, (o) => got1.push(o))).close, (await subscriber.subscribe(l2, (o) => got2.push(o))).close);
      await publisher.publish(l1, [outcome('a'), outcome('b')]);
      await publisher.publish(l1, [outcome('c')]);
      await publisher.publish(l2, [outcome('z')]);
      await waitFor(() => (got1.length === 2 && got2.length === 1) || null, { timeoutMs: 5000 });
      expect(got1).toEqual([[outcome('a'), outcome('b')], [outcome('c')]]);
      expect(got2).toEqual([[outcome('z')]]);
    });

    it('nothing reaches a closed subscription', async () => {
      const { publisher, subscriber } = make();
      const l = uniq('l');
      const got: FirstOutcome[][] = [];
      const sub = await subscriber.subscribe(l, (o) => got.push(o));
      await publisher.publish(l, [outcome('a')]);
      await waitFor(() => got.length === 1 || null, { timeoutMs: 5000 });
      await sub.close();
      await publisher.publish(l, [outcome('b')]);
      // A later listener's message arriving shows the closed one had its chance.
      const later = uniq('later');
      const seen: FirstOutcome[][] = [];
      closers.push((await subscriber.subscribe(later, (o) => seen.push(o))).close);
      await publisher.publish(later, [outcome('c')]);
      await waitFor(() => seen.length === 1 || null, { timeoutMs: 5000 });
      expect(got).toHaveLength(1);
    });
  });
