import { Kafka, logLevel } from 'kafkajs';
import type { ChaosFleet, Client, Receiver } from './harness';
import { chaosInfra } from './infra';

// What the Kafka-down scenario measures around the broker's return (docs/RELIABILITY.md,
// *Kafka down: the first delivery after the broker's return*).

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Enqueues one webhook every 250 ms until one is accepted or `until` passes (a monitor's check,
 * not a producer honouring Retry-After): something new waits to be delivered once the broker
 * is back, so the first delivery after it measures the recovery, not when the client's backoff
 * or the scripted retries happen to end. Counted as sent.
 */
export const enqueueWhenBack = async (fleet: ChaosFleet, rx: Receiver, client: Client, until: number): Promise<number | undefined> => {
  while (Date.now() < until) {
    const res = await fetch(`${fleet.baseUrl}/webhooks/chaos-0/enqueue`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ endpoint: rx.url('ok', 0), payload: { after_outage: true } }),
    }).catch(() => null);
    if (res?.status === 202) {
      client.accepted.set(((await res.json()) as { webhook_id: string }).webhook_id, 'ok');
      return Date.now();
    }
    await res?.body?.cancel();
    await sleep(250);
  }
  return undefined;
};

/**
 * When the restarted broker first describes `group` (its coordinator has loaded the group):
 * the part of the recovery that is the broker's own, polled every 100 ms until `until`.
 */
export const groupAnswers = async (group: string, until: number): Promise<number | undefined> => {
  const kafka = new Kafka({ clientId: 'chaos-coordinator-check', brokers: [chaosInfra.brokers], logLevel: logLevel.NOTHING, retry: { retries: 0 }, connectionTimeout: 1000 });
  while (Date.now() < until) {
    const admin = kafka.admin();
    try {
      await admin.connect();
      for (;;) {
        if (Date.now() >= until) return undefined;
        const ok = await admin.describeGroups([group]).then(
          (r) => r.groups.length > 0,
          () => false,
        );
        if (ok) return Date.now();
        await sleep(100);
      }
    } catch {
      await sleep(100);
    } finally {
      await admin.disconnect().catch(() => {});
    }
  }
  return undefined;
};
