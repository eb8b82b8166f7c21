import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config/load';
import { encodeWebhook } from '../../core/records/webhook';
import { MemoryHotState } from '../../core/memory/hot-state';
import { MemoryLog } from '../../core/memory/log';
import { createDeliverer } from '../../core/pipeline/deliver';
import { RESCHEDULED_HEADERS } from '../../core/pipeline/sent-marks';
import { systemClock } from '../../core/ports/clock';
import type { EndedLookup } from '../../core/ports/hot-state';
import type { ConsumedBatch, LogProducer } from '../../core/ports/log';
import { silentLogger } from '../../core/ports/logger';
import type { DeliveryResponse, Sender } from '../../core/ports/sender';
import { hook } from '../helpers/reconcile-fixtures';
import { memoryEndedStore } from '../helpers/memory-ended';

// Sent marks (docs/RELIABILITY.md, *Sent marks*): a pass answered 2xx is marked before its
// outcome is written; a copy of that pass consumed by a worker that looks it up (a partition's
// next owner, a record the scheduler put back) writes the delivered outcome and sends nothing.

const TTLS = { status_ttl: 86_400_000, stats_ttl: 86_400_000, retry_data_ttl: 86_400_000 };
const configOf = (overrides: Record<string, unknown> = {}) =>
  loadConfig({ env: {}, overrides: { 'delivery.straggler_after': 60_000, 'delivery.batch_time_limit': 60_000, ...overrides } });
const config = configOf();
const topic = config.kafka.topics.pending;
const IDS = ['wh_m1', 'wh_m2', 'wh_m3'];

const batchOf = (ids: string[], extra: Partial<ConsumedBatch> = {}, headers?: Record<string, string>, attempt = 0): ConsumedBatch => ({
  topic,
  partition: 0,
  records: ids.map((id, i) => ({
    topic,
    partition: 0,
    offset: String(i),
    key: 'cfg_m',
    value: encodeWebhook(hook(id, { config_id: 'cfg_m', attempt, endpoint: 'https://m.example.com/hook' })),
    timestamp: 0,
    ...(headers ? { headers } : {}),
  })),
  ...extra,
});

const countingSender = () => {
  const hits = new Map<string, number>();
  const sender: Sender = {
    send: async (req): Promise<DeliveryResponse> => {
      const id = req.headers['webhook-id']!;
      hits.set(id, (hits.get(id) ?? 0) + 1);
      return { kind: 'response', status: 204, retryAfter: null, bodySnippet: '', durationMs: 7 };
    },
    close: async () => {},
  };
  return { sender, hits };
};

const storeOf = memoryEndedStore;

const dead: LogProducer = { send: () => Promise.reject(new Error('the worker dies before its outcome is produced')), close: async () => {} };

/** A worker that gets its 2xx answers and dies before any outcome is durable. */
const deliverAndDie = async (hot: MemoryHotState, ended: EndedLookup, sender: Sender, batch: ConsumedBatch, cfg = config) => {
  const killed = createDeliverer({ config: cfg, hot, producer: dead, clock: systemClock, log: silentLogger, sender, ended });
  const run = killed(batch).catch(() => 'uncommitted');
  await new Promise((r) => setTimeout(r, 50));
  await killed.drain();
  expect(await run).toBe('uncommitted');
};

describe('a pass answered 2xx whose outcome was never written', () => {
  it("is not sent again by the partition's next owner: it writes the delivered outcome from the mark", async () => {
    const log = new MemoryLog(1);
    const hot = new MemoryHotState(TTLS, systemClock);
    const { ended, marks } = storeOf(hot);
    const { sender, hits } = countingSender();
    await deliverAndDie(hot, ended, sender, batchOf(IDS.slice(0, 2)));
    expect([...marks.keys()]).toEqual(IDS.slice(0, 2));
    const next = createDeliverer({ config, hot, producer: log.producer(), clock: systemClock, log: silentLogger, sender, ended });
    await next(batchOf(IDS, { maybeSeen: true }));
    expect(Object.fromEntries(hits)).toEqual({ wh_m1: 1, wh_m2: 1, wh_m3: 1 });
    // Every outcome is written, the replayed ones with the answer the mark kept.
    expect(log.records(config.kafka.topics.results).map((r) => r.key)).toEqual(IDS);
    expect(await hot.getStatus('wh_m1')).toMatchObject({ state: 'delivered', attempts: 1, last_status_code: 204 });
  });

  it('is not sent again when the scheduler put it back (its header), and is when the record is neither put back nor maybe seen', async () => {
    const hot = new MemoryHotState(TTLS, systemClock);
    const { ended } = storeOf(hot);
    const { sender, hits } = countingSender();
    await deliverAndDie(hot, ended, sender, batchOf(IDS));
    const next = createDeliverer({ config, hot, producer: new MemoryLog(1).producer(), clock: systemClock, log: silentLogger, sender, ended });
    await next(batchOf(IDS.slice(0, 2), {}, RESCHEDULED_HEADERS));
    await next(batchOf(IDS.slice(2)));
    expect(Object.fromEntries(hits)).toEqual({ wh_m1: 1, wh_m2: 1, wh_m3: 2 });
  });

  it('names one pass: a later pass of the same webhook (a retry asked for through the API) is sent', async () => {
    const hot = new MemoryHotState(TTLS, systemClock);
    const { ended } = storeOf(hot);
    const { sender, hits } = countingSender();
    await deliverAndDie(hot, ended, sender, batchOf(IDS));
    const next = createDeliverer({ config, hot, producer: new MemoryLog(1).producer(), clock: systemClock, log: silentLogger, sender, ended });
    await next(batchOf(IDS, { maybeSeen: true }, undefined, 1));
    expect(Object.fromEntries(hits)).toEqual({ wh_m1: 2, wh_m2: 2, wh_m3: 2 });
  });

  it('is not marked with delivery.sent_marks off (and is then sent again)', async () => {
    const hot = new MemoryHotState(TTLS, systemClock);
    const { ended, marks } = storeOf(hot);
    const { sender, hits } = countingSender();
    const off = configOf({ 'delivery.sent_marks': false });
    await deliverAndDie(hot, ended, sender, batchOf(IDS), off);
    expect(marks.size).toBe(0);
    await createDeliverer({ config: off, hot, producer: new MemoryLog(1).producer(), clock: systemClock, log: silentLogger, sender, ended })(batchOf(IDS, { maybeSeen: true }));
    expect(Object.fromEntries(hits)).toEqual({ wh_m1: 2, wh_m2: 2, wh_m3: 2 });
  });
});
