import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config/load';
import { endpointHash } from '../../core/domain/ids';
import { decodeWebhook } from '../../core/records/webhook';
import type { EnqueueItem } from '../../core/domain/enqueue';
import { batchingProducer } from '../../core/pipeline/batching-producer';
import { createEnqueuer } from '../../core/pipeline/enqueue';
import type { HotBatch } from '../../core/ports/hot-state';
import { silentLogger } from '../../core/ports/logger';
import { recordingHotState } from '../helpers/recording-hot-state';

// The enqueuer builds a request's webhooks without awaiting per item once it knows every
// endpoint's hash; the records must be the same as those of the first request, which waited
// for the hash.

const setup = () => {
  const config = loadConfig({ env: {} });
  let now = Date.UTC(2026, 0, 2, 3, 4, 5);
  const clock = { now: () => now };
  const sent: string[] = [];
  const { hot, applied } = recordingHotState(clock);
  const enqueue = createEnqueuer({
    config,
    clock,
    log: silentLogger,
    hot,
    producer: { send: async (rs) => void sent.push(...rs.map((r) => r.value!)), close: async () => {} },
  });
  return { enqueue, sent, applied, hot, tick: () => (now += 1) };
};

const items = (endpoint: string): EnqueueItem[] => [
  { endpoint, payload: '{"a": 1.0}', headers: {} },
  { endpoint, payload: '[1,2]', headers: {}, idempotency_key: 'k-1', max_attempts: 3 },
  { endpoint: `${endpoint}/other`, payload: '"s"', headers: { 'x-a': 'b' } },
];

/** A record with its id and stamps taken out: what must not differ between two requests. */
const shape = (value: string) => value.replace(/wh_[0-9A-Z]{26}/g, 'wh_ID').replace(/"(created_at|scheduled_at)":"[^"]+"/g, '"$1":"T"');

describe('enqueue records', () => {
  it('are the same whether the endpoint hashes were known or still being computed', async () => {
    const { enqueue, sent, tick } = setup();
    const first = await enqueue('cfg', items('https://example.com/h'));
    tick();
    const second = await enqueue('cfg', items('https://example.com/h'));
    expect(first.map((r) => r.status)).toEqual(['pending', 'pending', 'pending']);
    // The same idempotency key: the second request's item is the first one's webhook.
    expect(second.map((r) => r.status)).toEqual(['pending', 'duplicate', 'pending']);
    expect(second[1]!.webhook_id).toBe(first[1]!.webhook_id);
    expect(sent).toHaveLength(5);
    expect(shape(sent[3]!)).toBe(shape(sent[0]!));
    expect(shape(sent[4]!)).toBe(shape(sent[2]!));
    const w = decodeWebhook(sent[3]!);
    expect(w.endpoint_hash).toBe(await endpointHash('https://example.com/h'));
    expect(w.payload).toBe('{"a": 1.0}');
    // Ids still grow in item order within a request.
    expect(second[0]!.webhook_id < second[2]!.webhook_id).toBe(true);
  });

  it('counts each endpoint of a request once for the unique-endpoint stat', async () => {
    const { enqueue, applied, hot } = setup();
    const ep = 'https://example.com/many';
    await enqueue(
      'cfg',
      Array.from({ length: 50 }, (_, i) => ({ endpoint: i % 10 ? ep : `${ep}/b`, payload: `${i}`, headers: {} })),
    );
    await enqueue(
      'cfg',
      Array.from({ length: 50 }, (_, i) => ({ endpoint: ep, payload: `${i}`, headers: {} })),
    );
    expect(applied.map((b) => b.stats?.endpoints?.length)).toEqual([2, 1]);
    expect(applied.map((b) => b.stats?.counts.enqueued)).toEqual([50, 50]);
    const stats = await hot.stats(Date.UTC(2026, 0, 2, 3, 4, 5), 1);
    expect(stats.enqueued).toBe(100);
    expect(stats.unique_endpoints).toBe(2);
  });

  it('writes the pending statuses of the requests one produce acknowledged in one write', async () => {
    const { applied, hot } = setup();
    let ack!: () => void;
    const acked = new Promise<void>((r) => (ack = r));
    // One produce carries the records of all three requests (the api's batching producer).
    const producer = batchingProducer({ send: () => acked, close: async () => {} }, 1);
    const enq = createEnqueuer({ config: loadConfig({ env: {} }), clock: { now: () => Date.UTC(2026, 0, 2, 3, 4, 5) }, log: silentLogger, hot, producer });
    const calls = [1, 2, 3].map((i) => enq(`cfg-${i}`, [{ endpoint: `https://a.test/${i}`, payload: `${i}`, headers: {} }]));
    await new Promise((r) => setTimeout(r, 20));
    ack();
    const results = await Promise.all(calls);
    expect(applied).toHaveLength(1);
    expect(applied[0]!.statuses!.map((s) => s.status.webhook_id).sort()).toEqual(results.map((r) => r[0]!.webhook_id).sort());
    expect(applied[0]!.stats!.counts.enqueued).toBe(3);
    for (const r of results) expect((await hot.getStatus(r[0]!.webhook_id))?.state).toBe('pending');
  });

  it('writes the pending statuses of requests that arrive during a write together, with their stats summed', async () => {
    const { enqueue, applied, hot, tick } = setup();
    // Hold the first write until released: the next requests arrive while it is out.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const apply = hot.apply;
    let calls = 0;
    hot.apply = async (b: HotBatch) => {
      if (calls++ === 0) await held;
      return apply(b);
    };
    const first = enqueue('cfg', [{ endpoint: 'https://a.test/1', payload: '1', headers: {} }]);
    await new Promise((r) => setTimeout(r, 10));
    tick();
    const later = [1, 2, 3].map((i) => enqueue(`cfg-${i}`, [{ endpoint: `https://a.test/${i % 2}`, payload: `${i}`, headers: {} }]));
    await new Promise((r) => setTimeout(r, 10));
    expect(calls).toBe(1);
    release();
    const results = [await first, ...(await Promise.all(later))];
    expect(results.map((r) => r[0]!.status)).toEqual(['pending', 'pending', 'pending', 'pending']);
    // The three that waited left as one batch: their statuses, one count, each endpoint once.
    expect(applied).toHaveLength(2);
    expect(applied[1]!.statuses!.map((s) => s.status.config_id).sort()).toEqual(['cfg-1', 'cfg-2', 'cfg-3']);
    expect(applied[1]!.stats!.counts.enqueued).toBe(3);
    expect(applied[1]!.stats!.endpoints).toHaveLength(2);
    for (const r of results) expect((await hot.getStatus(r[0]!.webhook_id))?.state).toBe('pending');
    const stats = await hot.stats(Date.UTC(2026, 0, 2, 3, 4, 5), 1);
    expect(stats.enqueued).toBe(4);
    expect(stats.unique_endpoints).toBe(2);
  });
});
