import { createRedis } from '../../workers/redis/client';
import { chaosInfra } from './infra';
import { retryKeyOf } from '../helpers/retry-keys';

// The parts of the harness's receiver, client and fleet read here, described rather than
// imported: the harness calls these, so importing its types back would close a loop.
type Receiver = { byId: Map<string, { ok: number; requests?: number; log?: string[] }> };
type Client = { accepted: Map<string, unknown> };
type ChaosFleet = { baseUrl: string };

/** HOWK_CHAOS_TRACE=1: where a run's duplicates come from (the receiver logs every answer per webhook). */
export const traceDuplicates = (rx: Receiver, client: Client): void => {
  // How long after its first 2xx each duplicate came: a lease ran out (30 s), a rebalance (seconds).
  const gaps: Record<string, number> = { '<1s': 0, '1-5s': 0, '5-20s': 0, '20-40s': 0, '>40s': 0 };
  for (const e of rx.byId.values()) {
    const oks = (e.log ?? []).filter((l) => l.endsWith(':200')).map((l) => Number(l.split(':')[0]));
    for (let i = 1; i < oks.length; i++) {
      const g = oks[i]! - oks[0]!;
      gaps[g < 1000 ? '<1s' : g < 5000 ? '1-5s' : g < 20_000 ? '5-20s' : g < 40_000 ? '20-40s' : '>40s']!++;
    }
  }
  console.log('duplicates by delay after the first 2xx', JSON.stringify(gaps));
  const sample = [...rx.byId]
    .filter(([, e]) => e.ok > 1)
    .slice(0, 12)
    .map(([id, e]) => [id, client.accepted.get(id), e.log]);
  console.log('duplicate sample', JSON.stringify(sample));
};

/** What the fleet knows of webhooks that never arrived (for the report of a failed run). */
export const diagnose = async (fleet: ChaosFleet, rx: Receiver, ids: [string, string][]) => {
  const redis = createRedis(`${chaosInfra.redisUrl}/0`, {});
  try {
    return await Promise.all(
      ids.slice(0, 10).map(async ([id, kind]) => {
        const status = (await fetch(`${fleet.baseUrl}/webhooks/${id}/status`)
          .then((r) => r.json())
          .catch(() => null)) as { state?: string; attempts?: number; held?: string } | null;
        const due = await redis.zscore(retryKeyOf(id), id).catch(() => null);
        return {
          id,
          kind,
          requests: rx.byId.get(id)?.requests ?? 0,
          state: status?.state ?? null,
          attempts: status?.attempts ?? null,
          held: status?.held ?? null,
          scheduled_in_ms: due === null ? null : Number(due) - Date.now(),
        };
      }),
    );
  } finally {
    redis.disconnect();
  }
};

/** A fault the scenario caused (a kill, a SIGTERM, a new process), for the timeline. */
export type Fault = { at: number; what: string };
type Logs = { role: string; pid: number; out: string }[];

/** The workers' group membership lines (workers/kafka/consumer-parts.ts) and a few others worth placing on a timeline. */
const TIMELINE = /consumer group|batches in flight finished|session timeout below|howk-worker started|shutting down|offset commit failed|webhooks consumed again/;

/**
 * HOWK_CHAOS_TRACE=1: for each fault, what happened from 1 s before to 12 s after it, in ms
 * from the fault: the faults, each worker's group events (rebalancing, joined and in how
 * long, left), and the receiver's gaps of more than `minGap` ms without a 2xx.
 */
export const traceTimeline = (faults: Fault[], logs: Logs, gaps: [number, number][], minGap = 500): void => {
  const events: { at: number; line: string }[] = [];
  for (const { role, pid, out } of logs) {
    for (const l of out.split('\n')) {
      if (!TIMELINE.test(l)) continue;
      try {
        const { t, msg, level: _l, svc: _s, ...rest } = JSON.parse(l) as Record<string, unknown>;
        // The lane's group (workers, workers-slow), without the run's prefix.
        if (typeof rest.group === 'string') rest.group = rest.group.replace(/^chaos-.*-(workers(?:-slow)?)$/, '$1');
        events.push({ at: Date.parse(String(t)), line: `${role} ${pid}: ${String(msg)} ${JSON.stringify(rest)}` });
      } catch {
        // not a log line
      }
    }
  }
  for (const f of faults) events.push({ at: f.at, line: `FAULT ${f.what}` });
  for (const [a, b] of gaps) if (b - a > minGap) events.push({ at: a, line: `GAP ${b - a} ms without a 2xx (until +${b - a})` });
  events.sort((x, y) => x.at - y.at);
  for (const f of faults) {
    const near = events.filter((e) => e.at >= f.at - 1000 && e.at <= f.at + 12_000);
    console.log(`timeline around ${f.what}:\n${near.map((e) => `  ${String(e.at - f.at).padStart(6)} ms  ${e.line}`).join('\n')}`);
  }
};

/**
 * The longest a webhook accepted at or after `from` waited for its first request: how long
 * the partition it was on stood still (a dead owner not yet noticed, a rebalance), as a gap
 * over all deliveries cannot tell while the other partitions keep going.
 */
export const longestFirstWait = (client: { acceptedAt: Map<string, number> }, rx: Receiver, from: number): number => {
  let max = 0;
  for (const [id, at] of client.acceptedAt) {
    if (at < from) continue;
    const first = (rx.byId.get(id) as { first?: number } | undefined)?.first;
    if (first !== undefined) max = Math.max(max, first - at);
  }
  return max;
};

/**
 * HOWK_CHAOS_TRACE=1: the webhooks that waited longest for their first request, each placed
 * against the last worker kill before its acceptance (ms from the kill to the 202, and the
 * wait), with the receiver's answers: whether the slow ones cluster right after kills (the
 * dead owner's partitions) or are spread (a backlog).
 */
export const traceSlowest = (client: { acceptedAt: Map<string, number>; accepted: Map<string, unknown> }, rx: Receiver, faults: Fault[], from: number, n = 15): void => {
  const kills = faults.filter((f) => f.what.startsWith('kill -9 worker')).map((f) => f.at);
  const waits: { id: string; at: number; wait: number }[] = [];
  for (const [id, at] of client.acceptedAt) {
    const first = (rx.byId.get(id) as { first?: number } | undefined)?.first;
    if (at >= from && first !== undefined) waits.push({ id, at, wait: first - at });
  }
  waits.sort((a, b) => b.wait - a.wait);
  const sorted = waits.map((w) => w.wait).sort((a, b) => a - b);
  const q = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0;
  console.log(`first waits: p50 ${q(0.5)} p99 ${q(0.99)} p99.9 ${q(0.999)} max ${q(1)} ms; over 5 s: ${sorted.filter((w) => w > 5000).length}`);
  for (const w of waits.slice(0, n)) {
    const kill = kills.filter((k) => k <= w.at + 6000).pop();
    console.log(
      `  ${w.id} ${String(client.accepted.get(w.id))} wait ${w.wait} ms, accepted ${kill === undefined ? '-' : w.at - kill} ms after the last worker kill, answers ${JSON.stringify(rx.byId.get(w.id)?.log ?? [])}`,
    );
  }
};
