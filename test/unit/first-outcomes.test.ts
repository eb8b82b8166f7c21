import { describe, expect, it, vi } from 'vitest';
import type { Webhook } from '../../core/domain/webhook';
import { memoryOutcomeBus } from '../../core/memory/outcome-bus';
import type { Step } from '../../core/pipeline/attempt';
import { firstOutcomes } from '../../core/pipeline/first-outcomes';
import { redactWebhook } from '../../core/pipeline/redact';
import { createSyncWaits } from '../../core/pipeline/sync-wait';
import { silentLogger } from '../../core/ports/logger';
import type { FirstOutcome } from '../../core/ports/outcome-bus';
import { testWebhook } from '../helpers/webhook';

// The worker's side of a wait (which outcomes it publishes, to whom) and the api's (a slot
// watches before the produce, wakes on its own webhooks only, and the cap holds).

const hook = (id: string, o: Partial<Webhook> = {}): Webhook => testWebhook({ id, config_id: 'c', endpoint: 'https://example.com/h', endpoint_hash: 'ab'.repeat(16), ...o });
const ok = { kind: 'response' as const, status: 200, retryAfter: null, bodySnippet: '', durationMs: 3 };
const attempted = (w: Webhook, decision: any, response: any = ok): Step => ({ kind: 'attempted', o: { webhook: w, response, at: Date.UTC(2026, 0, 1), decision } });

describe('first outcomes: what the worker publishes', () => {
  it('only first attempts of webhooks marked awaited_by, grouped by listener', () => {
    const steps: Step[] = [
      attempted(hook('a', { awaited_by: 'api-1' }), { kind: 'delivered' }),
      attempted(
        hook('b', { awaited_by: 'api-2' }),
        { kind: 'retry', next: hook('b'), dueAt: Date.UTC(2026, 0, 1, 0, 0, 10), deferred: false },
        { kind: 'response', status: 503, retryAfter: null, bodySnippet: '', durationMs: 1 },
      ),
      attempted(
        hook('c', { awaited_by: 'api-1' }),
        { kind: 'dead', reason_type: 'unrecoverable', reason: 'HTTP 400' },
        { kind: 'response', status: 400, retryAfter: null, bodySnippet: '', durationMs: 1 },
      ),
      attempted(hook('d'), { kind: 'delivered' }),
      attempted(hook('e', { awaited_by: 'api-1', attempt: 1 }), { kind: 'delivered' }),
      { kind: 'held', webhook: hook('f', { awaited_by: 'api-1' }), at: 0 },
    ];
    const out = firstOutcomes(steps);
    expect([...out.keys()].sort()).toEqual(['api-1', 'api-2']);
    expect(out.get('api-1')!.map((o) => [o.webhook_id, o.status, o.dead_reason])).toEqual([
      ['a', 'delivered', null],
      ['c', 'dead_lettered', 'unrecoverable'],
    ]);
    expect(out.get('api-2')).toEqual([
      { webhook_id: 'b', status: 'retrying', attempts: 1, status_code: 503, error: 'HTTP 503', next_retry_at: '2026-01-01T00:00:10.000Z', dead_reason: null },
    ]);
  });

  it('nothing for a batch nobody waits for', () => {
    expect(firstOutcomes([attempted(hook('a'), { kind: 'delivered' })]).size).toBe(0);
  });

  it('a dead letter (and so a replay of it) does not carry the listener', () => {
    expect(redactWebhook(hook('a', { awaited_by: 'api-1' })).awaited_by).toBeUndefined();
  });
});

describe('sync waits: the api side', () => {
  const outcome = (id: string): FirstOutcome => ({ webhook_id: id, status: 'delivered', attempts: 1, status_code: 200, error: null, next_retry_at: null, dead_reason: null });

  it('an outcome published before the wait begins (right after the produce) is not missed', async () => {
    const bus = memoryOutcomeBus();
    const waits = createSyncWaits({ bus, listener: 'l1', maxWaiting: 5, log: silentLogger });
    await waits.start();
    const slot = waits.reserve('c')!;
    slot.watch(['a', 'b']);
    await bus.publish('l1', [outcome('a'), outcome('b'), outcome('x')]);
    await new Promise((r) => setTimeout(r, 0));
    const got = await slot.wait(10_000);
    expect([...got.keys()]).toEqual(['a', 'b']);
    slot.release();
  });

  it("a request is woken by its own webhooks only; another listener's messages never reach it", async () => {
    const bus = memoryOutcomeBus();
    const waits = createSyncWaits({ bus, listener: 'l1', maxWaiting: 5, log: silentLogger });
    await waits.start();
    const [s1, s2] = [waits.reserve('c')!, waits.reserve('c')!];
    s1.watch(['a']);
    s2.watch(['b']);
    const w1 = s1.wait(10_000);
    await bus.publish('l2', [outcome('a')]);
    await bus.publish('l1', [outcome('a')]);
    expect([...(await w1).keys()]).toEqual(['a']);
    expect((await s2.wait(20)).size).toBe(0);
    s1.release();
    s2.release();
  });

  it('a client that goes away ends its wait', async () => {
    const waits = createSyncWaits({ bus: memoryOutcomeBus(), listener: 'l', maxWaiting: 1, log: silentLogger });
    const slot = waits.reserve('c')!;
    slot.watch(['a']);
    const gone = new AbortController();
    const w = slot.wait(60_000, gone.signal);
    gone.abort();
    expect((await w).size).toBe(0);
    slot.release();
    expect(waits.reserve('c')).not.toBeNull();
  });

  it('a channel that cannot be subscribed at start is subscribed later', async () => {
    vi.useFakeTimers();
    try {
      const bus = memoryOutcomeBus();
      let fail = true;
      const flaky = { publish: bus.publish, subscribe: (l: string, on: (o: FirstOutcome[]) => void) => (fail ? Promise.reject(new Error('redis away')) : bus.subscribe(l, on)) };
      const waits = createSyncWaits({ bus: flaky, listener: 'l', maxWaiting: 1, log: silentLogger });
      await waits.start();
      fail = false;
      await vi.advanceTimersByTimeAsync(1000);
      const slot = waits.reserve('c')!;
      slot.watch(['a']);
      await bus.publish('l', [outcome('a')]);
      await vi.advanceTimersByTimeAsync(0);
      expect((await slot.wait(10)).size).toBe(1);
      await waits.stop();
    } finally {
      vi.useRealTimers();
    }
  });

  it('past maxWaiting no slot is given; a released slot frees its place', () => {
    const waits = createSyncWaits({ bus: memoryOutcomeBus(), listener: 'l', maxWaiting: 2, log: silentLogger });
    const a = waits.reserve('c')!;
    expect(waits.reserve('c')).not.toBeNull();
    expect(waits.reserve('c')).toBeNull();
    a.release();
    a.release();
    expect(waits.reserve('c')).not.toBeNull();
    expect(waits.reserve('c')).toBeNull();
  });
});
