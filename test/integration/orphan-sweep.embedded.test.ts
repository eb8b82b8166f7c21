import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { orphanGrace } from '../../core/reconcile/orphans';
import { waitFor } from '../helpers/env';
import { startTestFleet, type TestFleet } from '../helpers/fleet';
import { startReceiver, type Receiver } from '../helpers/receiver';

// howk-dev's embedded mode holds the same state (its log's howk.state, the memory hot state's
// retry schedule), so the same sweep guards it: a webhook whose schedule entry an ack took
// away (what the lost-retry race did) while its status says retrying is delivered again.
describe('orphan sweep (embedded mode)', () => {
  let rx: Receiver;
  let f: TestFleet;
  const SWEEP_MS = 300;

  beforeAll(async () => {
    rx = await startReceiver((r) => ({ status: Number(r.headers['x-webhook-attempt']) <= 1 ? 503 : 200 }));
    f = await startTestFleet('memory', {
      overrides: {
        'retry.base_delay': 1500,
        'retry.max_delay': 1500,
        'retry.jitter': 0,
        'scheduler.poll_interval': 200,
        'scheduler.lease': 1000,
        'delivery.timeout': 1000,
        'delivery.handoff_lease': 1000,
        'concurrency.inflight_ttl': 3000,
        'reconciler.orphan_sweep_interval': SWEEP_MS,
        'reconciler.orphan_grace': 0,
      },
    });
  });

  afterAll(async () => {
    await f?.stop();
    await rx?.close();
  });

  it('delivers a retrying webhook whose schedule entry was acked away', async () => {
    const res = await f.post('/webhooks/orph/enqueue', { endpoint: rx.url('/x'), payload: { n: 1 }, max_attempts: 5 });
    expect(res.status).toBe(202);
    const id = ((await res.json()) as any).webhook_id as string;
    await waitFor(async () => (await f.hot.getStatus(id))?.state === 'retrying' && f.records('state').some((r) => r.key === id && r.value !== null), {
      timeoutMs: 10_000,
      what: 'first attempt failed, snapshot on howk.state',
    });
    const dueAt = Date.parse((await f.hot.getStatus(id))!.next_retry_at!);
    await f.hot.ackRetries([{ id, leaseDueAt: dueAt }]);
    expect(await f.hot.retryCount()).toBe(0);
    const bound = dueAt + orphanGrace(f.config) + SWEEP_MS + 10_000;
    await waitFor(async () => (await f.hot.getStatus(id))?.state === 'delivered', { timeoutMs: bound - Date.now(), what: 'orphan delivered' });
    expect(rx.received.filter((r) => r.headers['webhook-id'] === id)).toHaveLength(2);
    expect(await f.fleet.metrics.exposition()).toMatchObject({ body: expect.stringMatching(/^howk_orphaned_retries_repaired_total 1$/m) });
  }, 40_000);
});
