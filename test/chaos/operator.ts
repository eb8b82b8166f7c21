import { profile, settle, startClient, type Client, type Receiver } from './harness';
import { workersJoined } from './infra';
import { SETTLE_MS, sleep, withParts } from './scenarios';
import { traceSlowest, traceTimeline, type Fault } from './trace';

// The operator's question (docs/RELIABILITY.md, "The operator scenario"): a small fleet under a
// steady load loses a worker to kill -9 (a lost host, the OOM killer). How long do webhooks wait
// then, end to end? howk-api, 2 workers and a scheduler as processes; 300 webhooks/s paced over
// 50 endpoints; one worker killed at 10 s and a replacement started at once (what a supervisor
// does).

const RATE = 300;
const ENDPOINTS = 50;
const KILL_AT_MS = 10_000;
/** Traffic time: full 60 s, ci 18 s (8 s after the kill: the 3 s session, the takeover, the backlog). */
const TRAFFIC_S = profile === 'full' ? 60 : 18;

const quantile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0;

/** Enqueue (the request that got the 202 was sent) → first 2xx at the receiver, per webhook delivered. */
export const enqueueToDelivery = (client: Pick<Client, 'sentAt'>, rx: Receiver, from = 0, to = Infinity): number[] => {
  const out: number[] = [];
  for (const [id, sent] of client.sentAt) {
    if (sent < from || sent >= to) continue;
    const first = rx.byId.get(id)?.first;
    if (first !== undefined && (rx.byId.get(id)?.ok ?? 0) > 0) out.push(first - sent);
  }
  return out.sort((a, b) => a - b);
};

/**
 * When the killed worker's partitions delivered again: the latest first request, counted from
 * the kill, of the webhooks accepted in the 3 s after it (those on a live worker's partitions
 * go at once; those on the dead one's wait for the group to move them).
 */
const partitionsBack = (client: Client, rx: Receiver, killAt: number): number => {
  let max = 0;
  for (const [id, at] of client.acceptedAt) {
    if (at < killAt || at > killAt + 3000) continue;
    const first = rx.byId.get(id)?.first;
    if (first !== undefined) max = Math.max(max, first - killAt);
  }
  return max;
};

export const operatorScenario = (run: number) =>
  withParts(
    'operator',
    { workers: 2, schedulers: 1 },
    async ({ rx, fleet, dl }) => {
      const client = startClient(fleet, rx, RATE * TRAFFIC_S, { ok: 1 }, 4, { perSecond: RATE, batch: 10, endpoints: ENDPOINTS });
      const start = Date.now();
      await sleep(KILL_AT_MS);
      const victim = fleet.running().find((p) => p.role === 'worker')!;
      const killAt = Date.now();
      const faults: Fault[] = [{ at: killAt, what: `kill -9 worker ${victim.child.pid}` }];
      await fleet.kill9(victim);
      const next = fleet.spawn('worker');
      faults.push({ at: Date.now(), what: `new worker ${next.child.pid}` });
      // The group still counts the dead member until its session times out (3 s).
      await sleep(4000);
      await workersJoined(`${fleet.prefix}-workers`, 2).catch(() => undefined);
      faults.push({ at: Date.now(), what: 'group stable with 2 members' });
      await client.done;
      const trafficEnd = Date.now();
      const { dead_letters_on_topic: _t, unresolved, ...f } = await settle(client, rx, dl, SETTLE_MS, fleet);
      if (process.env.HOWK_CHAOS_TRACE) {
        traceTimeline(faults, fleet.logs(), rx.gaps(start, 500));
        traceSlowest(client, rx, faults, start);
      }
      const e2e = enqueueToDelivery(client, rx);
      return {
        ...f,
        recover_ms: partitionsBack(client, rx, killAt),
        notes: {
          ...(unresolved ? { unresolved } : {}),
          processes: 'api, 2 workers (one killed at 10 s, replaced at once), 1 scheduler',
          recover: "kill → the dead worker's partitions delivering again",
          enqueue_to_delivery_p50_ms: quantile(e2e, 0.5),
          enqueue_to_delivery_p99_ms: quantile(e2e, 0.99),
          enqueue_to_delivery_max_ms: quantile(e2e, 1),
          over_6s: e2e.filter((x) => x > 6000).length,
          // The machine's own share: the same measure for the webhooks enqueued before the kill.
          before_kill_p99_ms: quantile(enqueueToDelivery(client, rx, 0, killAt), 0.99),
          before_kill_max_ms: quantile(enqueueToDelivery(client, rx, 0, killAt), 1),
          longest_gap_ms: rx.longestStall(start, trafficEnd),
          traffic_s: Math.round((trafficEnd - start) / 1000),
        },
      };
    },
    run,
  );
