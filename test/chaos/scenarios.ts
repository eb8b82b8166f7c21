import { keys } from '../../core/domain/keys';
import { createRedis } from '../../workers/redis/client';
import { waitFor } from '../helpers/env';
import { chaosFleet, chaosReceiver, deadLetterCollector, profile, settle, startClient, type ChaosFleet, type Client, type Figures, type Receiver } from './harness';
import { chaosInfra, workersJoined } from './infra';
import { duplicateBreakdown } from './duplicates';
import { enqueueWhenBack, groupAnswers } from './kafka-return';
import { startSvixTraffic, SVIX_ENV } from './svix-traffic';
import { longestFirstWait, traceSlowest, traceTimeline, type Fault } from './trace';

// The four chaos scenarios (docs/RELIABILITY.md "Chaos suite"). Each returns its figures;
// chaos.test.ts asserts.

// full: the full sizes (`npm run test:chaos`, each scenario 3x). ci: what `npm test`
// runs, once: the same scenarios, outages and fleet, fewer webhooks (their fixed costs - the
// 10 s outages, a broker restart, rebalances - dominate the time either way).
export const SIZES = {
  // svix: messages sent through the kill -9 run beside the batches, each fanned out to 4 endpoints.
  ci: { flush: 600, kill: 2000, kafka: 600, redis: 600, svix: 50 },
  full: { flush: 5000, kill: 20_000, kafka: 5000, redis: 5000, svix: 500 },
}[profile];

export const SETTLE_MS = profile === 'full' ? 600_000 : 300_000;
const OUTAGE_MS = 10_000;
/** Redis down (4): 10 s; the full profile keeps it away 30 s (HOWK_CHAOS_REDIS_OUTAGE_MS sets it). */
export const REDIS_OUTAGE_MS = Number(process.env.HOWK_CHAOS_REDIS_OUTAGE_MS ?? (profile === 'full' ? 30_000 : OUTAGE_MS));
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export type Parts = { rx: Receiver; fleet: ChaosFleet; dl: Awaited<ReturnType<typeof deadLetterCollector>> };

export const withParts = async (
  name: string,
  counts: { workers: number; schedulers: number },
  fn: (p: Parts) => Promise<Omit<Figures, 'scenario' | 'run' | 'seconds'>>,
  run: number,
  env: Record<string, string> = {},
): Promise<Figures> => {
  const t0 = Date.now();
  const rx = await chaosReceiver();
  const fleet = await chaosFleet(name, counts, env);
  const dl = await deadLetterCollector(fleet);
  try {
    const f = await fn({ rx, fleet, dl });
    return { scenario: name, run, ...f, seconds: Math.round((Date.now() - t0) / 1000) };
  } catch (e) {
    throw new Error(`${(e as Error).message}\n${fleet.output()}`);
  } finally {
    await fleet.stop();
    // HOWK_CHAOS_LOGS=1: info-level logs of every process, kept in .tmp/chaos-logs/<scenario>-<run>/.
    if (process.env.HOWK_CHAOS_LOGS) fleet.dump(`.tmp/chaos-logs/${name}-${run}`);
    await dl.stop();
    await rx.close();
  }
};

/** Accepted webhooks the receiver has refused at least once and not yet accepted: mid-retry. */
const midRetry = (client: Client, rx: Receiver) => {
  let n = 0;
  for (const [id, kind] of client.accepted) {
    const e = rx.byId.get(id);
    if ((kind === 'flaky' || kind === 'exhaust') && e && e.requests > 0 && e.ok === 0 && e.requests < 3) n++;
  }
  return n;
};

const canary = async () => {
  const r = createRedis(chaosInfra.redisUrl, { db: 0 });
  try {
    return (await r.exists(keys.canary())) === 1;
  } catch {
    return false;
  } finally {
    r.disconnect();
  }
};

const listedDeadLetters = async (fleet: ChaosFleet) => {
  let n = 0;
  for (let c = 0; c < 10; c++) {
    let cursor: string | null = null;
    do {
      const res = await fetch(`${fleet.baseUrl}/deadletter?config_id=chaos-${c}&limit=500${cursor ? `&cursor=${cursor}` : ''}`);
      const body = (await res.json()) as { items: unknown[]; next_cursor: string | null };
      n += body.items.length;
      cursor = body.next_cursor;
    } while (cursor);
  }
  return n;
};

/** 1. FLUSHALL in the middle, a third of the webhooks mid-retry. */
export const flushScenario = (run: number) =>
  withParts(
    'redis-flushall',
    { workers: 2, schedulers: 1 },
    async ({ rx, fleet, dl }) => {
      const client = startClient(fleet, rx, SIZES.flush, { ok: 9, flaky: 6, bad: 1, exhaust: 2 });
      await waitFor(() => midRetry(client, rx) >= SIZES.flush / 8 && client.accepted.size >= SIZES.flush / 3, { timeoutMs: 120_000, intervalMs: 100, what: 'webhooks mid-retry' });
      const inFlight = midRetry(client, rx);
      const redis = createRedis(chaosInfra.redisUrl, { db: 0 });
      const flushAt = Date.now();
      await redis.flushall();
      await redis.quit();
      await waitFor(canary, { timeoutMs: 60_000, intervalMs: 50, what: 'the canary, set again by a rebuild' });
      const recover = Date.now() - flushAt;
      const { dead_letters_on_topic, unresolved, ...f } = await settle(client, rx, dl, SETTLE_MS, fleet);
      return {
        ...f,
        recover_ms: recover,
        notes: { mid_retry_at_flush: inFlight, dead_letters_on_topic, dead_letters_listed_after: await listedDeadLetters(fleet), ...(unresolved ? { unresolved } : {}) },
      };
    },
    run,
  );

/** 2. kill -9 of a random worker or scheduler every few seconds, Svix messages fanned out beside the batches. */
export const killScenario = (run: number) =>
  withParts(
    'kill-9',
    { workers: 3, schedulers: 2 },
    async ({ rx, fleet, dl }) => {
      const n = SIZES.kill;
      // A steady stream through the kills (ci: 20 s, full: 67 s), so that a gap between
      // deliveries is a stall, not the end of a backlog or a retry's backoff.
      const client = startClient(fleet, rx, n, { ok: 16, flaky: 3, bad: 1 }, 4, { perSecond: profile === 'full' ? 300 : 100, batch: 20 });
      const svix = await startSvixTraffic(fleet, rx, client, SIZES.svix, 10);
      const every = 3000;
      let kills = 0;
      let killing = true;
      const firstKillAt = Date.now() + every;
      const faults: Fault[] = [];
      const killer = (async () => {
        while (killing) {
          await sleep(every);
          // One fault at a time: the next kill waits until every worker is in the group (a
          // replacement takes 6-16 s to start on the loaded 2 cores; killing the ones still
          // starting left no worker at all for 45-79 s, a measure of the machine's load).
          await workersJoined(`${fleet.prefix}-workers`, 3).catch(() => undefined);
          if (!killing) return;
          const live = fleet.running();
          const victim = live[Math.floor(Math.random() * live.length)]!;
          faults.push({ at: Date.now(), what: `kill -9 ${victim.role} ${victim.child.pid}` });
          await fleet.kill9(victim);
          kills++;
          const next = fleet.spawn(victim.role as 'worker' | 'scheduler');
          faults.push({ at: Date.now(), what: `new ${next.role} ${next.child.pid}` });
        }
      })();
      // Kill through the run: until nearly every webhook has arrived, and at least 3 times (a
      // fast machine must not get through the small ci profile between two kills).
      const deliveredOrDead = () => [...client.accepted.keys()].filter((id) => (rx.byId.get(id)?.ok ?? 0) > 0 || dl.reasons.has(id)).length;
      await waitFor(() => client.accepted.size >= n && deliveredOrDead() >= n * 0.97 && kills >= 3, {
        timeoutMs: SETTLE_MS,
        intervalMs: 500,
        what: 'deliveries under kill -9',
      }).catch(() => undefined);
      killing = false;
      await killer;
      await client.done;
      // The messages' webhooks join the books (client.accepted) once every message is on Kafka.
      const fanned = await svix.done;
      const streamEnd = Date.now();
      const { dead_letters_on_topic: _t, unresolved, ...f } = await settle(client, rx, dl, SETTLE_MS, fleet);
      if (process.env.HOWK_CHAOS_TRACE) {
        traceTimeline(
          faults.filter((x) => x.what.includes('worker')),
          fleet.logs(),
          rx.gaps(firstKillAt, 500),
        );
        traceSlowest(client, rx, faults, firstKillAt);
      }
      return {
        ...f,
        recover_ms: rx.longestStall(firstKillAt, streamEnd),
        notes: {
          ...(unresolved ? { unresolved } : {}),
          kills,
          worker_kills: faults.filter((x) => x.what.startsWith('kill -9 worker')).length,
          processes: '3 workers + 2 schedulers',
          svix_messages: fanned.messages,
          svix_webhooks: fanned.webhooks,
          svix_duplicates: fanned.duplicates(),
          recover: 'longest gap between deliveries while killing and enqueueing',
          longest_first_attempt_wait_ms: longestFirstWait(client, rx, firstKillAt),
          duplicate_breakdown: duplicateBreakdown(rx, faults),
        },
      };
    },
    run,
    SVIX_ENV,
  );

/** 3. The Kafka broker stopped for 10 s, then started again. */
export const kafkaScenario = (run: number) =>
  withParts(
    'kafka-down',
    { workers: 2, schedulers: 1 },
    async ({ rx, fleet, dl }) => {
      const client = startClient(fleet, rx, SIZES.kafka, { ok: 9, flaky: 1 }, 2);
      await waitFor(() => client.accepted.size >= SIZES.kafka * 0.3, { timeoutMs: 120_000, intervalMs: 50, what: 'a third accepted' });
      const downAt = Date.now();
      await chaosInfra.stopKafka();
      const stoppedAt = Date.now();
      // What a producer sees meanwhile.
      const probe = await fetch(`${fleet.baseUrl}/webhooks/chaos-probe/enqueue`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ endpoint: rx.url('ok', 0), payload: {} }),
      });
      const probeStatus = probe.status;
      const retryAfter = probe.headers.get('retry-after');
      await probe.body?.cancel();
      await sleep(Math.max(0, downAt + OUTAGE_MS - Date.now()));
      const upAt = Date.now();
      const probeAccepted = enqueueWhenBack(fleet, rx, client, upAt + 120_000);
      await chaosInfra.startKafka();
      const readyAt = Date.now();
      const coordinatorAt = await groupAnswers(`${fleet.prefix}-workers`, readyAt + 60_000);
      const acceptedAt = await probeAccepted;
      const { dead_letters_on_topic: _t, unresolved, ...f } = await settle(client, rx, dl, SETTLE_MS, fleet);
      const during = client.refusals.filter((r) => r.at >= stoppedAt && r.at < readyAt);
      const firstOk = rx.firstOkAfter(readyAt) ?? Date.now();
      return {
        ...f,
        recover_ms: firstOk - readyAt,
        notes: {
          ...(unresolved ? { unresolved } : {}),
          broker_ready_at: new Date(readyAt).toISOString(),
          broker_down_ms: upAt - downAt,
          broker_restart_ms: readyAt - upAt,
          group_described_after_ready_ms: coordinatorAt === undefined ? null : coordinatorAt - readyAt,
          enqueue_accepted_after_ready_ms: acceptedAt === undefined ? null : acceptedAt - readyAt,
          longest_gap_after_first_delivery_ms: rx.longestStall(firstOk + 1),
          probe_during_outage: `${probeStatus} Retry-After ${retryAfter}`,
          refused_during_outage: during.length,
          refusals_without_503_retry_after: during.filter((r) => r.status !== 503 || !r.retryAfter).length,
          recover: 'broker ready → first delivery',
        },
      };
    },
    run,
    // The fetch hold on (it is the default; named so that the scenario keeps testing it).
    { HOWK_KAFKA_MAX_BATCHES_IN_FLIGHT: '4' },
  );

/** 4. Redis stopped for 10 s (full profile: 30 s); it comes back empty. */
export const redisScenario = (run: number) =>
  withParts(
    'redis-down',
    { workers: 2, schedulers: 1 },
    async ({ rx, fleet, dl }) => {
      // Paced over twice the outage: a third is enqueued before it, half during it. Sent all at
      // once, the whole load was delivered in the outage's first second (before the count below
      // starts), and only the retries, which Redis holds, were left for the outage itself.
      const pace = { perSecond: Math.ceil(SIZES.redis / ((2 * REDIS_OUTAGE_MS) / 1000)), batch: 10 };
      const client = startClient(fleet, rx, SIZES.redis, { ok: 8, flaky: 2 }, 2, pace);
      await waitFor(() => client.accepted.size >= SIZES.redis * 0.3, { timeoutMs: 120_000, intervalMs: 50, what: 'a third accepted' });
      const downAt = Date.now();
      await chaosInfra.stopRedis();
      // Idempotency fails open: the same key twice is accepted twice (a duplicate beats a refusal).
      const twice = [];
      for (let i = 0; i < 2; i++) {
        const res = await fetch(`${fleet.baseUrl}/webhooks/chaos-0/enqueue`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ endpoint: rx.url('ok', 0), payload: { probe: i }, idempotency_key: 'same-key' }),
        });
        twice.push(res.status);
        if (res.status === 202) client.accepted.set(((await res.json()) as { webhook_id: string }).webhook_id, 'ok');
      }
      const ready = (await fetch(`${fleet.baseUrl}/ready`)).status;
      await sleep(Math.max(0, downAt + REDIS_OUTAGE_MS - Date.now()));
      const upAt = Date.now();
      await chaosInfra.startRedis();
      await waitFor(canary, { timeoutMs: 60_000, intervalMs: 50, what: 'the canary, set again by a rebuild' });
      const canaryAt = Date.now();
      const { dead_letters_on_topic: _t, unresolved, ...f } = await settle(client, rx, dl, SETTLE_MS, fleet);
      return {
        ...f,
        recover_ms: canaryAt - upAt,
        notes: {
          ...(unresolved ? { unresolved } : {}),
          enqueue_during_outage: twice.join(','),
          ready_during_outage: ready,
          // Delivery degrades, it does not stop: within local bounds while Redis is away (1 s to notice it).
          outage_ms: upAt - downAt,
          requests_sent_during_outage: rx.requestsBetween(downAt + 1000, upAt),
          delivered_during_outage: rx.okBetween(downAt + 1000, upAt),
          first_delivery_after_restart_ms: (rx.firstOkAfter(upAt) ?? Date.now()) - upAt,
          recover: 'redis up → canary rebuilt',
        },
      };
    },
    run,
  );
