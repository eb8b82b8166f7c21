import { afterAll, describe, expect, it } from 'vitest';
import { endpointHash } from '../../core/domain/ids';
import { waitFor } from '../helpers/env';
import { startTestFleet, type TestFleet } from '../helpers/fleet';
import { startReceiver, type Receiver } from '../helpers/receiver';

// Pause and resume racing on an endpoint with 1,000 held webhooks, on real Kafka + Redis
// with a worker: every resume answers, the drain ends, and the loopback receiver gets each
// webhook exactly once (counted by webhook-id).

const N = 1000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('pause/resume race (kafka + redis)', () => {
  let f: TestFleet | undefined;
  let rx: Receiver | undefined;
  afterAll(async () => {
    await f?.stop();
    await rx?.close();
  });

  it('toggling pause and resume during the drain of 1,000 held webhooks: every resume answers, each webhook is delivered once', async () => {
    rx = await startReceiver(() => ({ status: 200 }));
    f = await startTestFleet('kafka', { overrides: { 'circuit_breaker.enabled': false } });
    const fleet = f;
    const endpoint = rx.url('/race');
    const hash = await endpointHash(endpoint);
    const view = async () => (await (await fetch(`${fleet.baseUrl}/endpoints/${hash}`)).json()) as { paused: boolean; draining: boolean; parked_while_paused: number };
    // Each request gets a generous deadline: the finding was a resume that never answered.
    const call = async (op: 'pause' | 'resume') => {
      const res = await fetch(`${fleet.baseUrl}/endpoints/${hash}/${op}`, { method: 'POST', signal: AbortSignal.timeout(60_000) });
      expect(res.status).toBe(200);
      return (await res.json()) as { paused: boolean; released?: number; drain?: string };
    };

    expect((await call('pause')).paused).toBe(true);
    const ids: string[] = [];
    for (let b = 0; b < N / 100; b++) {
      const res = await f.post(`/webhooks/race-${b % 4}/enqueue/batch`, { webhooks: Array.from({ length: 100 }, (_, i) => ({ endpoint, payload: { i: b * 100 + i } })) });
      expect(res.status).toBe(202);
      ids.push(...((await res.json()) as { results: { webhook_id: string }[] }).results.map((r) => r.webhook_id));
    }
    await waitFor(async () => (await view()).parked_while_paused === N, { timeoutMs: 90_000, what: `${N} webhooks held` });
    expect(rx.received).toHaveLength(0);

    // Resumes and pauses racing the drain: two resumes at once, pauses in between.
    const answers: Promise<unknown>[] = [];
    for (let round = 0; round < 6; round++) {
      answers.push(call('resume'), call('resume'));
      await sleep(20 + round * 15);
      answers.push(call('pause'));
      await sleep(10);
    }
    const settled = await Promise.allSettled(answers);
    expect(settled.filter((s) => s.status === 'rejected').map((s) => String((s as PromiseRejectedResult).reason))).toEqual([]);

    // The last word is a resume: the pause ends and everything is delivered.
    await waitFor(
      async () => {
        await call('resume');
        const v = await view();
        return !v.paused && !v.draining && v.parked_while_paused === 0;
      },
      { timeoutMs: 90_000, intervalMs: 200, what: 'the pause to end' },
    );
    await waitFor(() => rx!.byWebhook().size >= N, { timeoutMs: 120_000, what: `${N} distinct webhooks delivered` });
    // Room for a duplicate to show up.
    await sleep(2000);
    const byId = rx.byWebhook();
    expect([...byId.keys()].sort()).toEqual([...ids].sort());
    const twice = [...byId].filter(([, rs]) => rs.length > 1).map(([id, rs]) => `${id} x${rs.length}`);
    expect(twice).toEqual([]);
    expect(await view()).toMatchObject({ paused: false, draining: false, parked_while_paused: 0 });
  }, 300_000);
});
