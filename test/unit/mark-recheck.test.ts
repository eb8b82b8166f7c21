import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config/load';
import { encodeWebhook } from '../../core/records/webhook';
import { MemoryHotState } from '../../core/memory/hot-state';
import { MemoryLog } from '../../core/memory/log';
import { createDeliverer } from '../../core/pipeline/deliver';
import { RECHECK_AFTER_MS } from '../../core/pipeline/known-passes';
import { systemClock } from '../../core/ports/clock';
import type { ConsumedBatch } from '../../core/ports/log';
import { silentLogger } from '../../core/ports/logger';
import type { DeliveryResponse, Sender } from '../../core/ports/sender';
import { hook } from '../helpers/reconcile-fixtures';
import { memoryEndedStore } from '../helpers/memory-ended';

// A partition moved between live workers: the new owner looks its records up at its first
// fetch, while the old owner still has some of them on the wire. Their 2xx (and sent marks)
// come after that lookup; under a backlog the new owner's lane reaches them seconds later and
// sent them again (the copies 10-40 s after the first in the loaded full kill -9 chaos run).
// A webhook reached more than RECHECK_AFTER_MS after its batch's lookup is looked up again.

const TTLS = { status_ttl: 86_400_000, stats_ttl: 86_400_000, retry_data_ttl: 86_400_000 };
const config = loadConfig({ env: {}, overrides: { 'delivery.straggler_after': 60_000, 'delivery.batch_time_limit': 60_000 } });
const topic = config.kafka.topics.pending;
const IDS = ['wh_r1', 'wh_r2', 'wh_r3'];

describe('a batch that may have been seen, whose lane reaches a webhook long after the lookup', () => {
  it("looks it up again: the old owner's 2xx marked since is written delivered, not sent again", async () => {
    const hot = new MemoryHotState(TTLS, systemClock);
    const { ended, marks } = memoryEndedStore(hot);
    const hits = new Map<string, number>();
    const sender: Sender = {
      send: async (req): Promise<DeliveryResponse> => {
        const id = req.headers['webhook-id']!;
        // The lane's first webhook is slow: the others are reached well after the lookup.
        if (id === 'wh_r1') await new Promise((r) => setTimeout(r, RECHECK_AFTER_MS * 2));
        hits.set(id, (hits.get(id) ?? 0) + 1);
        return { kind: 'response', status: 200, retryAfter: null, bodySnippet: 'ok', durationMs: 1 };
      },
      close: async () => {},
    };
    const log = new MemoryLog(1);
    const deliver = createDeliverer({ config, hot, producer: log.producer(), clock: systemClock, log: silentLogger, sender, ended });
    const batch: ConsumedBatch = {
      topic,
      partition: 0,
      maybeSeen: true,
      records: IDS.map((id, i) => ({
        topic,
        partition: 0,
        offset: String(i),
        key: 'cfg_r',
        value: encodeWebhook(hook(id, { config_id: 'cfg_r', attempt: 0, endpoint: 'https://r.example.com/hook' })),
        timestamp: 0,
      })),
    };
    const done = deliver(batch);
    // The old owner's answers for wh_r2 and wh_r3 arrive after the lookup.
    await new Promise((r) => setTimeout(r, 100));
    for (const id of ['wh_r2', 'wh_r3']) marks.set(id, { pass: 0, status: 200, at: Date.now(), durationMs: 3 });
    await done;
    expect(Object.fromEntries(hits)).toEqual({ wh_r1: 1 });
    expect(await hot.getStatus('wh_r2')).toMatchObject({ state: 'delivered', attempts: 1 });
    expect(await hot.getStatus('wh_r3')).toMatchObject({ state: 'delivered', attempts: 1 });
    await deliver.drain();
  });
});
