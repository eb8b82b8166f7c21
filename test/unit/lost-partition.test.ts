import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config/load';
import { encodeWebhook } from '../../core/records/webhook';
import { MemoryHotState } from '../../core/memory/hot-state';
import { MemoryLog } from '../../core/memory/log';
import { createDeliverer } from '../../core/pipeline/deliver';
import { systemClock } from '../../core/ports/clock';
import type { ConsumedBatch } from '../../core/ports/log';
import { silentLogger } from '../../core/ports/logger';
import type { DeliveryResponse, Sender } from '../../core/ports/sender';
import { hook } from '../helpers/reconcile-fixtures';

// A batch whose partition goes to another consumer in a rebalance (ConsumedBatch.lost) while
// its lane is still sending: the next owner starts from the last commit and sends what this
// batch has not started, so this worker stops there (docs/RELIABILITY.md, *Duplicates under
// kill -9*). What it did send has its outcome written; the batch commits nothing.

const TTLS = { status_ttl: 86_400_000, stats_ttl: 86_400_000, retry_data_ttl: 86_400_000 };
const config = loadConfig({ env: {}, overrides: { 'delivery.straggler_after': 60_000, 'delivery.batch_time_limit': 60_000 } });
const topic = config.kafka.topics.pending;
const IDS = ['wh_l1', 'wh_l2', 'wh_l3', 'wh_l4'];

describe('a batch of a partition lost to another consumer', () => {
  it('sends none of its webhooks not started, writes the outcome of those it sent, and rejects', async () => {
    const state = { lost: false };
    const sent: string[] = [];
    const sender: Sender = {
      send: async (req): Promise<DeliveryResponse> => {
        sent.push(req.headers['webhook-id']!);
        // The rebalance lands while the second webhook is on the wire.
        if (sent.length === 2) state.lost = true;
        return { kind: 'response', status: 200, retryAfter: null, bodySnippet: 'ok', durationMs: 1 };
      },
      close: async () => {},
    };
    const log = new MemoryLog(1);
    const hot = new MemoryHotState(TTLS, systemClock);
    const deliver = createDeliverer({ config, hot, producer: log.producer(), clock: systemClock, log: silentLogger, sender });
    const batch: ConsumedBatch = {
      topic,
      partition: 0,
      records: IDS.map((id, i) => ({
        topic,
        partition: 0,
        offset: String(i),
        key: 'cfg_l',
        value: encodeWebhook(hook(id, { config_id: 'cfg_l', attempt: 0, endpoint: 'https://l.example.com/hook' })),
        timestamp: 0,
      })),
      lost: () => state.lost,
    };
    await expect(deliver(batch)).rejects.toThrow(/partition lost/);
    expect(sent).toEqual(['wh_l1', 'wh_l2']);
    expect(log.records(config.kafka.topics.results).map((r) => r.key)).toEqual(['wh_l1', 'wh_l2']);
    expect((await hot.getStatus('wh_l2'))?.state).toBe('delivered');
  });
});
