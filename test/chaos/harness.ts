import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../../core/config/load';
import { KafkaLog } from '../../workers/kafka/log';
import { uniq, waitFor } from '../helpers/env';
import { TEST_SECRET } from '../helpers/fleet';
import { freePort, spawnRole, stopProc, type Proc } from '../helpers/procs';
import { chaosInfra, workersJoined } from './infra';
import type { Kind, Receiver } from './receiver';
import { diagnose, traceDuplicates } from './trace';
import { tellHistory } from './history';

export { chaosReceiver, FLAKY_FAILURES, type Answer, type Kind, type Receiver } from './receiver';

export const OUTCOME: Record<Kind, string> = { ok: 'delivered', flaky: 'delivered', bad: 'unrecoverable', exhaust: 'exhausted' };
const MAX_ATTEMPTS: Record<Kind, number> = { ok: 10, flaky: 10, bad: 10, exhaust: 3 };

// The pieces every chaos scenario is made of: a receiver that records every delivery, the
// binaries as processes on the chaos servers, a client that enqueues (retrying a refused
// batch after Retry-After, as a well-behaved producer does), and the books: sent, delivered,
// dead-lettered, lost, duplicates.

/** HOWK_CHAOS_PROFILE: ci (default; what `npm test` runs) or full (`npm run test:chaos`). */
export const profile: 'ci' | 'full' = (() => {
  const p = process.env.HOWK_CHAOS_PROFILE || 'ci';
  if (p !== 'ci' && p !== 'full') throw new Error(`HOWK_CHAOS_PROFILE must be ci or full, not ${JSON.stringify(p)}`);
  return p;
})();
export const repetitions = Number(process.env.HOWK_CHAOS_REPEAT ?? (profile === 'full' ? 3 : 1));

/**
 * The settings a fault fleet's processes share, here and in the replicated project's fault
 * tests: topics and a consumer group of their own, loopback receivers, short retries, and
 * circuits that the scripted 503s of the flaky endpoints never open.
 */
export const fleetSettings = (prefix: string): Record<string, string> => ({
  ...Object.fromEntries(Object.keys(loadConfig({ env: {} }).kafka.topics).map((t) => [`HOWK_KAFKA_TOPICS_${t.toUpperCase()}`, `${prefix}.${t}`])),
  HOWK_KAFKA_CONSUMER_GROUP: `${prefix}-workers`,
  HOWK_KAFKA_PARTITIONS: '6',
  HOWK_DELIVERY_ALLOWED_NETWORKS: '127.0.0.0/8',
  HOWK_SIGNING_DEFAULT_SECRET: TEST_SECRET,
  HOWK_RETRY_BASE_DELAY: '1s',
  HOWK_RETRY_MAX_DELAY: '4s',
  HOWK_SCHEDULER_POLL_INTERVAL: '100ms',
  // Circuits on (while Redis is away each worker keeps the last known ones), but not opened by the scripted failures.
  HOWK_CIRCUIT_BREAKER_FAILURE_THRESHOLD: '100000',
  HOWK_RECONCILER_SENTINEL_INTERVAL: '1s',
  HOWK_RECONCILER_LOCK_TTL: '10s',
  // Restored retries that were due wait this long for copies already on their way (default 30 s).
  HOWK_RECONCILER_RESTORE_DELAY: '10s',
});

export type ChaosFleet = Awaited<ReturnType<typeof chaosFleet>>;

/** howk-api, workers and schedulers as processes on the chaos Kafka + Redis; topics of their own. */
export const chaosFleet = async (name: string, counts: { workers: number; schedulers: number }, extra: Record<string, string> = {}) => {
  const prefix = uniq(`chaos-${name}`);
  const port = await freePort();
  const env: Record<string, string> = {
    HOWK_API_PORT: String(port),
    HOWK_API_HOST: '127.0.0.1',
    HOWK_API_AUTH_ENABLED: 'false',
    HOWK_KAFKA_BROKERS: chaosInfra.brokers,
    HOWK_REDIS_URL: `${chaosInfra.redisUrl}/0`,
    ...fleetSettings(prefix),
    // HOWK_CHAOS_TRACE reads the workers' group membership lines (info) for its timeline.
    // warn by default: a lost webhook's report greps the fleet's output for its id (history.ts).
    HOWK_LOG_LEVEL: process.env.HOWK_CHAOS_LOGS || process.env.HOWK_CHAOS_TRACE ? 'info' : 'warn',
    ...extra,
  };
  const api = spawnRole('api', env);
  const procs: Proc[] = [];
  const spawn = (role: 'worker' | 'scheduler') => {
    const p = spawnRole(role, env);
    procs.push(p);
    return p;
  };
  for (let i = 0; i < counts.schedulers; i++) spawn('scheduler');
  for (let i = 0; i < counts.workers; i++) spawn('worker');
  const baseUrl = `http://127.0.0.1:${port}`;
  await waitFor(async () => (await fetch(`${baseUrl}/ready`).catch(() => undefined))?.status === 200, { timeoutMs: 120_000, what: `howk-api ready\n${api.output()}` });
  // Every worker in the group before traffic starts: on a busy machine a worker can take 10 s
  // to start, and one joining in the middle of a scenario's outage moves partitions (a
  // rebalance) that the scenario does not mean to test (the kill -9 one rebalances by design).
  try {
    await workersJoined(`${prefix}-workers`, counts.workers);
  } catch (e) {
    const output = [api, ...procs].map((p) => `--- ${p.role}\n${p.output().slice(-3000)}`).join('\n');
    await Promise.all([api, ...procs].map((p) => stopProc(p)));
    throw new Error(`${(e as Error).message}\n${output}`);
  }
  return {
    prefix,
    env,
    baseUrl,
    api,
    /** Live workers and schedulers. */
    running: () => procs.filter((p) => p.child.exitCode === null && p.child.signalCode === null),
    spawn,
    kill9: async (p: Proc) => {
      p.child.kill('SIGKILL');
      await p.exited;
    },
    output: () => [api, ...procs].map((p) => `--- ${p.role}\n${p.output().slice(-3000)}`).join('\n'),
    /** Every process's kept output, for test/chaos/trace.ts's timeline. */
    logs: () => [api, ...procs].map((p) => ({ role: p.role, pid: p.child.pid ?? 0, out: p.output() })),
    /** Every process's output (its last 100-200 KB) as files in `dir`, to read after a run (HOWK_CHAOS_LOGS). */
    dump: (dir: string) => {
      mkdirSync(dir, { recursive: true });
      [api, ...procs].forEach((p, i) => writeFileSync(join(dir, `${i}-${p.role}.log`), p.output()));
    },
    stop: async () => {
      await Promise.all(
        [api, ...procs].map(async (p) => {
          const t = Date.now();
          await stopProc(p);
          // A graceful stop that needed the SIGKILL fallback (10 s) is worth knowing about.
          if (Date.now() - t > 5000)
            console.log(`chaos: slow stop of a ${p.role}: ${Date.now() - t} ms, exit ${p.child.exitCode ?? p.child.signalCode}\n${p.output().slice(-1500)}`);
        }),
      );
    },
  };
};

/** Every record of the fleet's dead-letter topic, read from Kafka (the truth). */
export const deadLetterCollector = async (fleet: ChaosFleet) => {
  const reasons = new Map<string, string>();
  const log = new KafkaLog({ brokers: [chaosInfra.brokers], clientId: 'chaos-dl', produceTimeoutMs: 10_000, maxWaitMs: 100, maxBytesPerPartition: 1 << 20 });
  const consumer = log.consumer({ groupId: uniq('chaos-dl'), topics: [`${fleet.prefix}.deadletter`], fromBeginning: true });
  await consumer.run(async (b) => {
    for (const r of b.records) {
      const v = JSON.parse(r.value ?? '{}') as { webhook_id?: string; reason_type?: string };
      if (v.webhook_id) reasons.set(v.webhook_id, v.reason_type ?? '?');
    }
  });
  return { reasons, stop: () => log.close() };
};

export type Client = ReturnType<typeof startClient>;
export type Pace = { perSecond: number; batch: number; endpoints?: number };

/**
 * Enqueues n webhooks in batches of 100 (or `pace`d: perSecond, in batches of `batch`, over `endpoints`, default 8, per kind), `parallel` batches in flight. A refused batch
 * (503 + Retry-After) is sent again after Retry-After: only 202s count as accepted.
 */
export const startClient = (fleet: Pick<ChaosFleet, 'baseUrl'>, rx: Receiver, n: number, mix: Partial<Record<Kind, number>>, parallel = 4, pace?: Pace) => {
  const accepted = new Map<string, Kind>();
  const acceptedAt = new Map<string, number>();
  const sentAt = new Map<string, number>(); // when the request that got the 202 left: the enqueue as its caller sees it
  const t0 = Date.now();
  const refusals: { at: number; status: number; retryAfter: string | null }[] = [];
  const kinds = Object.entries(mix).flatMap(([k, w]) => Array<Kind>(w!).fill(k as Kind));
  const kindOf = (i: number): Kind => kinds[(i * 7919) % kinds.length]!;
  let next = 0;
  const sendBatch = async (from: number, to: number) => {
    const webhooks: { endpoint: string; payload: { i: number; kind: Kind }; max_attempts: number }[] = [];
    for (let i = from; i < to; i++) {
      const kind = kindOf(i);
      webhooks.push({ endpoint: rx.url(kind, i % (pace?.endpoints ?? 8)), payload: { i, kind }, max_attempts: MAX_ATTEMPTS[kind] });
    }
    const body = JSON.stringify({ webhooks });
    for (;;) {
      const sent = Date.now();
      // A request that fails without an answer may still have been produced: its webhooks are
      // not counted as sent (only a 202 is), though they may be delivered or dead-lettered.
      const res = await fetch(`${fleet.baseUrl}/webhooks/chaos-${i10(from)}/enqueue/batch`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
        signal: AbortSignal.timeout(120_000),
      }).catch(() => null);
      if (res?.status === 202) {
        const out = (await res.json()) as { results: { webhook_id: string }[] };
        const at = Date.now();
        out.results.forEach((r, k) => (accepted.set(r.webhook_id, webhooks[k]!.payload.kind), acceptedAt.set(r.webhook_id, at), sentAt.set(r.webhook_id, sent)));
        return;
      }
      const retryAfter = res?.headers.get('retry-after') ?? null;
      refusals.push({ at: Date.now(), status: res?.status ?? 0, retryAfter });
      await res?.body?.cancel();
      await new Promise((r) => setTimeout(r, Math.min(Number(retryAfter ?? 1), 5) * 1000));
    }
  };
  const lane = async () => {
    while (next < n) {
      const from = next;
      const to = (next = Math.min(n, next + (pace?.batch ?? 100)));
      // Paced: a steady stream through the faults (batch k leaves at k * batch / perSecond).
      if (pace) await new Promise((r) => setTimeout(r, t0 + (from / pace.perSecond) * 1000 - Date.now()));
      await sendBatch(from, to);
    }
  };
  const done = Promise.all(Array.from({ length: parallel }, lane)).then(() => undefined);
  return { accepted, acceptedAt, sentAt, refusals, done };
};

const i10 = (i: number) => String(Math.floor(i / 100) % 10);

export type Figures = {
  scenario: string;
  run: number;
  sent: number;
  delivered: number;
  dead_lettered: number;
  lost: number;
  wrong_outcome: number;
  duplicates: number;
  recover_ms: number;
  seconds: number;
  notes: Record<string, unknown>;
};

/** Waits until every accepted webhook is delivered or dead-lettered (or the time is up), then counts. */
export const settle = async (client: Client, rx: Receiver, dl: { reasons: Map<string, string> }, timeoutMs: number, fleet?: ChaosFleet) => {
  await client.done;
  const resolved = (id: string) => (rx.byId.get(id)?.ok ?? 0) > 0 || dl.reasons.has(id);
  await waitFor(() => [...client.accepted.keys()].every(resolved), { timeoutMs, intervalMs: 500, what: 'every accepted webhook delivered or dead-lettered' }).catch(
    () => undefined,
  );
  let delivered = 0;
  let dead = 0;
  let lost = 0;
  let wrong = 0;
  let duplicates = 0;
  for (const [id, kind] of client.accepted) {
    const ok = rx.byId.get(id)?.ok ?? 0;
    const reason = dl.reasons.get(id);
    if (ok > 0) delivered++;
    if (reason) dead++;
    if (!ok && !reason) lost++;
    duplicates += Math.max(0, ok - 1);
    const outcome = ok > 0 ? 'delivered' : reason;
    if (outcome && outcome !== OUTCOME[kind]) wrong++;
  }
  const unresolved = [...client.accepted].filter(([id]) => !resolved(id));
  if (process.env.HOWK_CHAOS_TRACE) traceDuplicates(rx, client);
  // A lost webhook's whole story (Kafka's records of it, the fleet's log lines naming it, the
  // receiver's answers), printed for the run's report: enough to tell where it was dropped.
  if (unresolved.length && fleet) {
    const told = await tellHistory(
      { brokers: [chaosInfra.brokers], prefix: fleet.prefix, logs: fleet.logs() },
      unresolved.map(([id]) => id),
      (id) => rx.byId.get(id)?.log ?? [],
    );
    console.log(`chaos: history of unresolved webhooks ${told}`);
  }
  return {
    sent: client.accepted.size,
    delivered,
    dead_lettered: dead,
    lost,
    wrong_outcome: wrong,
    duplicates,
    /** Every dead letter on the topic, also of webhooks whose enqueue answer never came. */
    dead_letters_on_topic: dl.reasons.size,
    ...(unresolved.length && fleet ? { unresolved: await diagnose(fleet, rx, unresolved) } : {}),
  };
};

export const formatFigures = (f: Figures): string =>
  `chaos ${f.scenario} #${f.run}: sent ${f.sent}, delivered ${f.delivered}, dead-lettered ${f.dead_lettered}, lost ${f.lost}, wrong outcome ${f.wrong_outcome}, duplicates ${f.duplicates}, time to recover ${f.recover_ms} ms, run ${f.seconds} s ${JSON.stringify(f.notes)}`;
