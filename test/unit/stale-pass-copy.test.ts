import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config/load';
import { MemoryHotState } from '../../core/memory/hot-state';
import { MemoryLog } from '../../core/memory/log';
import { createDeliverer } from '../../core/pipeline/deliver';
import { createSchedulerTick } from '../../core/pipeline/scheduler';
import { encodeWebhook, type Webhook } from '../../core/records/webhook';
import { systemClock, type Clock } from '../../core/ports/clock';
import type { ConsumedBatch } from '../../core/ports/log';
import { silentLogger } from '../../core/ports/logger';
import type { DeliveryResponse, Sender } from '../../core/ports/sender';
import { hook } from '../helpers/reconcile-fixtures';

// The webhook the full chaos run of scenario 4 lost (Redis stopped 30 s, a worker dropped from
// its group meanwhile): a flaky webhook's third attempt failed on worker A, whose outcome
// scheduled the fourth try; a copy of that third pass, consumed again by the partition's next
// owner, wrote its lease (or park) of the third pass when Redis came back, after A's retry.
// The scheduler then re-enqueued the third pass, A skipped it as made (its outcome was written),
// and the webhook stayed `retrying` with nothing scheduled. docs/RELIABILITY.md, "Redis
// unreachable: delivery degrades, it does not stop".

const TTLS = { status_ttl: 86_400_000, stats_ttl: 86_400_000, retry_data_ttl: 86_400_000 };
const config = loadConfig({ env: {}, overrides: { 'delivery.straggler_after': 60_000, 'delivery.batch_time_limit': 60_000 } });
const { pending } = config.kafka.topics;

/** 503 to the first three attempts of every webhook (x-webhook-attempt), 200 after: the chaos 'flaky' receiver. */
const flaky = () => {
  const seen: string[] = [];
  const sender: Sender = {
    send: async (req): Promise<DeliveryResponse> => {
      const attempt = Number(req.headers['x-webhook-attempt']);
      seen.push(`a${attempt}`);
      return { kind: 'response', status: attempt <= 3 ? 503 : 200, retryAfter: null, bodySnippet: '', durationMs: 1 };
    },
    close: async () => {},
  };
  return { sender, seen };
};

const batchOf = (values: string[], offset: number): ConsumedBatch => ({
  topic: pending,
  partition: 0,
  records: values.map((value, i) => ({ topic: pending, partition: 0, offset: String(offset + i), key: 'cfg_r', value, timestamp: 0 })),
});

describe("a copy of a pass made already, written to the retry schedule after that pass's outcome", () => {
  it('does not take the place of the next try: the webhook gets its fourth attempt and is delivered', async () => {
    const log = new MemoryLog(1);
    const hot = new MemoryHotState(TTLS, systemClock);
    const { sender, seen } = flaky();
    const w: Webhook = hook('wh_lost', { attempt: 2, max_attempts: 10, deferrals: 0 });
    const workerA = createDeliverer({ config, hot, producer: log.producer(), clock: systemClock, log: silentLogger, sender });
    // Every retry is due for this scheduler (its clock is an hour ahead): no waiting out backoffs.
    const later: Clock = { now: () => Date.now() + 3_600_000 };
    const tick = createSchedulerTick({ config, hot, producer: log.producer(), clock: later, log: silentLogger });

    // Worker A makes the third pass: 503, the fourth try is scheduled.
    await workerA(batchOf([encodeWebhook(w)], 0));
    expect(seen).toEqual(['a3']);
    expect((await hot.getStatus(w.id))?.state).toBe('retrying');

    // The copy of the third pass on the partition's next owner: its lease, written late.
    await hot.apply({ retries: [{ id: w.id, dueAt: Date.now() + config.delivery.handoff_lease, data: encodeWebhook(w) }] });

    // What the scheduler re-enqueues goes to worker A, until nothing is left to re-enqueue.
    let offset = 1;
    for (let round = 0; round < 5; round++) {
      const before = log.records(pending).length;
      if (!(await tick())) break;
      const values = log
        .records(pending)
        .slice(before)
        .map((r) => r.value ?? '');
      await workerA(batchOf(values, offset));
      offset += values.length;
    }
    expect(seen).toEqual(['a3', 'a4']);
    expect((await hot.getStatus(w.id))?.state).toBe('delivered');
    expect(await hot.retryCount()).toBe(0);
  });
});
