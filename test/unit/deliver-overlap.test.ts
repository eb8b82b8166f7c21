import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config/load';
import { encodeWebhook } from '../../core/records/webhook';
import { MemoryHotState } from '../../core/memory/hot-state';
import { MemoryLog } from '../../core/memory/log';
import { createDeliverer } from '../../core/pipeline/deliver';
import { silentLogger } from '../../core/ports/logger';
import { systemClock } from '../../core/ports/clock';
import type { LogConsumer } from '../../core/ports/log';
import type { DeliveryRequest, DeliveryResponse, Sender } from '../../core/ports/sender';
import { waitFor } from '../helpers/env';
import { hook } from '../helpers/reconcile-fixtures';

// The consumer starts a partition's next batch while the earlier one still delivers
// (core/ports/log.ts). Per-config order must hold across such overlapping batches: the
// deliverer registers each config's lane at the call, behind the lane of the batch before.

// No straggler hand-off in this test: the first batch stays unresolved while its first
// delivery is held, so the second batch can only run because consumption is pipelined.
const config = loadConfig({ env: {}, overrides: { 'delivery.straggler_after': 60_000, 'delivery.batch_time_limit': 60_000 } });
const topic = config.kafka.topics.pending;
const TTLS = { status_ttl: 86_400_000, stats_ttl: 86_400_000, retry_data_ttl: 86_400_000 };

const webhook = (id: string, configId: string) =>
  hook(id, { config_id: configId, endpoint: `https://${configId}.example.com/hook`, endpoint_hash: configId.padEnd(32, '0'), attempt: 0 });

/** Answers 200 to every delivery, except that the one of `heldId` waits for release(). */
const holdingSender = (heldId: string) => {
  const sent: string[] = [];
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  const sender: Sender = {
    send: async (req: DeliveryRequest): Promise<DeliveryResponse> => {
      const id = req.headers['webhook-id']!;
      if (id === heldId) await held;
      sent.push(id);
      return { kind: 'response', status: 200, retryAfter: null, bodySnippet: 'ok', durationMs: 1 };
    },
    close: async () => {},
  };
  return { sender, sent, release };
};

describe('overlapping batches of one partition', () => {
  let consumer: LogConsumer | undefined;
  afterEach(async () => {
    await consumer?.stop();
  });

  it('deliver the webhooks of one config in record order while other configs go ahead', async () => {
    const log = new MemoryLog(1);
    const producer = log.producer();
    const { sender, sent, release } = holdingSender('wh_a1');
    const deliver = createDeliverer({ config, hot: new MemoryHotState(TTLS, systemClock), producer, clock: systemClock, log: silentLogger, sender });
    consumer = log.consumer({ groupId: 'g', topics: [topic] });
    await consumer.run(deliver);

    const send = (ids: [string, string][]) => producer.send(ids.map(([id, cfg]) => ({ topic, key: cfg, value: encodeWebhook(webhook(id, cfg)) })));
    await send([
      ['wh_a1', 'cfg_a'],
      ['wh_a2', 'cfg_a'],
    ]);
    // The first batch is in flight: its first delivery is held.
    await new Promise((r) => setTimeout(r, 100));
    expect(sent).toEqual([]);
    await send([
      ['wh_a3', 'cfg_a'],
      ['wh_b1', 'cfg_b'],
      ['wh_a4', 'cfg_a'],
    ]);
    // The second batch runs while the first is unresolved: another config's webhook goes out...
    await waitFor(() => sent.includes('wh_b1'), { timeoutMs: 5000, what: 'wh_b1 delivered while wh_a1 is held' });
    // ...but cfg_a's webhooks of the second batch wait behind those of the first.
    await new Promise((r) => setTimeout(r, 100));
    expect(sent).toEqual(['wh_b1']);
    release();
    await waitFor(() => sent.length === 5, { timeoutMs: 5000, what: 'every delivery' });
    expect(sent.filter((id) => id.startsWith('wh_a'))).toEqual(['wh_a1', 'wh_a2', 'wh_a3', 'wh_a4']);
  });
});
