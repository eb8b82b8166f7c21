import { KafkaLog } from '../../workers/kafka/log';
import { uniq, waitFor } from '../helpers/env';
import { TEST_SECRETS_KEY } from '../helpers/fleet';
import type { ChaosFleet, Client, Kind, Receiver } from './harness';
import { chaosInfra } from './infra';

// Svix messages through a chaos scenario: one application whose endpoints have each fate of
// the receiver (ok, flaky, bad, exhaust), so each message fans out to four webhooks made in one
// Kafka send. A message answered 202 has its record (and the webhook of each endpoint) on the
// messages topic: read from Kafka, the truth, those webhooks join the scenario's books, and
// the scenario's own counts (lost, wrong outcome, duplicates) cover them.

/** The env the fleet needs for the Svix API: endpoint secrets are sealed with it. */
export const SVIX_ENV = { HOWK_SECRETS_KEY: TEST_SECRETS_KEY };

const FATES: { kind: Kind; maxAttempts: number }[] = [
  { kind: 'ok', maxAttempts: 10 },
  { kind: 'flaky', maxAttempts: 10 },
  { kind: 'bad', maxAttempts: 10 },
  { kind: 'exhaust', maxAttempts: 3 },
];
export const SVIX_FANOUT = FATES.length;

const post = (fleet: ChaosFleet, path: string, body: unknown) =>
  fetch(`${fleet.baseUrl}/api/v1${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(60_000),
  }).catch(() => null);

/** POSTs until a 2xx (the model may still be loading, Kafka may be away); the answer's JSON. */
const created = async (fleet: ChaosFleet, path: string, body: unknown, until: number): Promise<{ id: string }> => {
  for (;;) {
    const res = await post(fleet, path, body);
    if (res && res.status < 300) return (await res.json()) as { id: string };
    await res?.body?.cancel();
    if (Date.now() > until) throw new Error(`POST ${path}: no 2xx (last ${res?.status ?? 'no answer'})`);
    await new Promise((r) => setTimeout(r, 500));
  }
};

/** Every message record of the fleet's messages topic: message id → its webhooks by endpoint. */
const messageCollector = async (fleet: ChaosFleet) => {
  const deliveries = new Map<string, { endpoint_id: string; webhook_id: string }[]>();
  const log = new KafkaLog({ brokers: [chaosInfra.brokers], clientId: 'chaos-msg', produceTimeoutMs: 10_000, maxWaitMs: 100, maxBytesPerPartition: 1 << 20 });
  const consumer = log.consumer({ groupId: uniq('chaos-msg'), topics: [`${fleet.prefix}.messages`], fromBeginning: true });
  await consumer.run(async (b) => {
    for (const r of b.records) {
      const v = JSON.parse(r.value ?? '{}') as { id?: string; deliveries?: { endpoint_id: string; webhook_id: string }[] };
      if (v.id && v.deliveries) deliveries.set(v.id, v.deliveries);
    }
  });
  return { deliveries, stop: () => log.close() };
};

/**
 * Sends `n` messages (paced at `perSecond`, two in flight), each with an eventId: a request
 * refused or left without an answer is sent again and is the same message. `done` resolves
 * once every message is accepted and its webhooks are in `client.accepted`.
 */
export const startSvixTraffic = async (fleet: ChaosFleet, rx: Receiver, client: Client, n: number, perSecond: number) => {
  const until = Date.now() + 120_000;
  const app = await created(fleet, '/app', { name: 'chaos' }, until);
  const kindOf = new Map<string, Kind>();
  for (const [k, f] of FATES.entries()) {
    const ep = await created(fleet, `/app/${app.id}/endpoint`, { url: rx.url(f.kind, 90 + k), maxAttempts: f.maxAttempts }, until);
    kindOf.set(ep.id, f.kind);
  }
  const collector = await messageCollector(fleet);
  const accepted: string[] = [];
  const t0 = Date.now();
  let next = 0;
  const lane = async () => {
    for (let i = next++; i < n; i = next++) {
      await new Promise((r) => setTimeout(r, t0 + (i / perSecond) * 1000 - Date.now()));
      accepted.push((await created(fleet, `/app/${app.id}/msg`, { eventType: 'chaos.fanout', eventId: `m${i}`, payload: { i } }, Date.now() + 600_000)).id);
    }
  };
  const done = (async () => {
    try {
      await Promise.all([lane(), lane()]);
      await waitFor(() => accepted.every((id) => collector.deliveries.has(id)), { timeoutMs: 120_000, intervalMs: 200, what: 'every accepted message on the messages topic' });
      for (const id of accepted)
        for (const d of collector.deliveries.get(id)!) {
          client.accepted.set(d.webhook_id, kindOf.get(d.endpoint_id)!);
        }
      const ids = accepted.flatMap((id) => collector.deliveries.get(id)!.map((d) => d.webhook_id));
      /** Duplicates among the messages' webhooks alone (a 2xx beyond the first), once the scenario has settled. */
      const duplicates = () => ids.reduce((n, id) => n + Math.max(0, (rx.byId.get(id)?.ok ?? 0) - 1), 0);
      return { messages: accepted.length, webhooks: ids.length, duplicates };
    } finally {
      await collector.stop();
    }
  })();
  done.catch(() => undefined);
  return { done };
};
