// The counts of kafka-request-counter.ts as a benchmark reads them from its services: a
// snapshot (SIGUSR2, then the file the role wrote), the difference of two, and the totals per
// webhook that kafka-requests-paced.bench.ts prints.
import { readFileSync, rmSync } from 'node:fs';
import { sleep, type Svc } from './busy-harness';
import type { Counts } from './kafka-request-counter';

export type CountedRole = { svc: Svc; out: string };

/** The role's counts so far (SIGUSR2 makes it write them). */
export const snapshot = async (r: CountedRole): Promise<Counts> => {
  rmSync(r.out, { force: true });
  r.svc.child.kill('SIGUSR2');
  for (let i = 0; i < 100; i++) {
    try {
      return JSON.parse(readFileSync(r.out, 'utf8')) as Counts;
    } catch {
      await sleep(20);
    }
  }
  throw new Error(`${r.svc.name} wrote no counts`);
};

const sub = (a: Record<string, number>, b: Record<string, number>, name: (k: string) => string = (k) => k): Record<string, number> => {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(b)) out[name(k)] = v - (a[k] ?? 0);
  return out;
};

/** b - a; topic and group names lose the run id. */
export const diff = (a: Counts, b: Counts, runId: string): Counts => {
  const apis: Counts['apis'] = {};
  for (const [k, v] of Object.entries(b.apis)) {
    const o = a.apis[k] ?? { requests: 0, requestBytes: 0, responseBytes: 0, waitMs: 0 };
    apis[k] = { requests: v.requests - o.requests, requestBytes: v.requestBytes - o.requestBytes, responseBytes: v.responseBytes - o.responseBytes, waitMs: v.waitMs - o.waitMs };
  }
  const fetches: Counts['fetches'] = {};
  for (const [k, v] of Object.entries(b.fetches)) {
    const o = a.fetches[k] ?? { requests: 0, responseBytes: 0 };
    fetches[k.replace(runId, '')] = { requests: v.requests - o.requests, responseBytes: v.responseBytes - o.responseBytes };
  }
  const ar = a.redis ?? { commands: {}, roundTrips: 0 };
  const br = b.redis ?? { commands: {}, roundTrips: 0 };
  return {
    apis,
    fetches,
    produced: sub(a.produced, b.produced, (k) => k.replace(`${runId}.`, '')),
    producedBatches: b.producedBatches - a.producedBatches,
    taken: b.taken - a.taken,
    takenBatches: b.takenBatches - a.takenBatches,
    redis: { commands: sub(ar.commands, br.commands), roundTrips: br.roundTrips - ar.roundTrips },
  };
};

/** The columns of the per-webhook table: Kafka requests by kind, records produced, Redis commands and round trips. */
export type PerWebhook = {
  produce: number;
  fetch: number;
  commit: number;
  heartbeat: number;
  otherKafka: number;
  kafka: number;
  records: number;
  redisCommands: number;
  redisTrips: number;
};
export const PER_WEBHOOK_COLUMNS: (keyof PerWebhook)[] = ['produce', 'fetch', 'commit', 'heartbeat', 'otherKafka', 'kafka', 'records', 'redisCommands', 'redisTrips'];

export const perWebhook = (c: Counts, webhooks: number): PerWebhook => {
  const req = (api: string) => c.apis[api]?.requests ?? 0;
  const kafka = Object.values(c.apis).reduce((s, v) => s + v.requests, 0);
  const produce = req('Produce');
  const fetch = req('Fetch');
  const commit = req('OffsetCommit');
  const heartbeat = req('Heartbeat');
  const n = Math.max(1, webhooks);
  return {
    produce: produce / n,
    fetch: fetch / n,
    commit: commit / n,
    heartbeat: heartbeat / n,
    otherKafka: (kafka - produce - fetch - commit - heartbeat) / n,
    kafka: kafka / n,
    records: Object.values(c.produced).reduce((s, v) => s + v, 0) / n,
    redisCommands: Object.values(c.redis.commands).reduce((s, v) => s + v, 0) / n,
    redisTrips: c.redis.roundTrips / n,
  };
};

export const sumPerWebhook = (xs: PerWebhook[]): PerWebhook => {
  const out = Object.fromEntries(PER_WEBHOOK_COLUMNS.map((k) => [k, 0])) as PerWebhook;
  for (const x of xs) for (const k of PER_WEBHOOK_COLUMNS) out[k] += x[k];
  return out;
};

/** The biggest entries of a count map, per webhook, as "name 1.23". */
export const topEntries = (m: Record<string, number>, webhooks: number, n = 8): string =>
  Object.entries(m)
    .filter(([, v]) => v > 0)
    .sort((x, y) => y[1] - x[1])
    .slice(0, n)
    .map(([k, v]) => `${k} ${(v / Math.max(1, webhooks)).toFixed(2)}`)
    .join(', ');
