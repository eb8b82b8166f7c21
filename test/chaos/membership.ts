import { waitFor } from '../helpers/env';
import { stopProc } from '../helpers/procs';
import { profile, settle, startClient } from './harness';
import { workersJoined } from './infra';
import { SETTLE_MS, sleep, withParts } from './scenarios';
import { longestFirstWait, traceTimeline, type Fault } from './trace';

// The consumer group's membership under a steady stream (docs/RELIABILITY.md, "Chaos suite"):
// a deploy's rolling restart, and a worker joining a busy group. Each member that leaves or
// joins rebalances the group, which pauses every member until it has rejoined.

const RATE = profile === 'full' ? 300 : 100;

/** 5. A rolling restart: each worker in turn gets SIGTERM, a new one starts once it is gone and has joined before the next. */
export const rollingScenario = (run: number) =>
  withParts(
    'rolling-restart',
    { workers: 3, schedulers: 1 },
    async ({ rx, fleet, dl }) => {
      const n = RATE * (profile === 'full' ? 60 : 30);
      const client = startClient(fleet, rx, n, { ok: 1 }, 4, { perSecond: RATE, batch: 10 });
      await waitFor(() => client.accepted.size >= RATE * 3, { timeoutMs: 60_000, intervalMs: 50, what: 'traffic flowing' });
      const faults: Fault[] = [];
      const from = Date.now();
      const stopTimes: number[] = [];
      for (const old of fleet.running().filter((p) => p.role === 'worker')) {
        const t = Date.now();
        faults.push({ at: t, what: `SIGTERM worker ${old.child.pid}` });
        await stopProc(old);
        stopTimes.push(Date.now() - t);
        const next = fleet.spawn('worker');
        faults.push({ at: Date.now(), what: `new worker ${next.child.pid}` });
        await workersJoined(`${fleet.prefix}-workers`, 3);
        await sleep(1000);
      }
      const to = Date.now();
      await client.done;
      const { dead_letters_on_topic: _t, unresolved, ...f } = await settle(client, rx, dl, SETTLE_MS, fleet);
      if (process.env.HOWK_CHAOS_TRACE) traceTimeline(faults, fleet.logs(), rx.gaps(from, 300), 300);
      return {
        ...f,
        recover_ms: rx.longestStall(from, to),
        notes: {
          ...(unresolved ? { unresolved } : {}),
          restarts: stopTimes.length,
          stop_ms: stopTimes.join(','),
          longest_first_attempt_wait_ms: longestFirstWait(client, rx, from),
          recover: 'longest gap between deliveries during the restarts',
        },
      };
    },
    run,
  );

/** 6. A worker joins a group of two busy ones. */
export const joinScenario = (run: number) =>
  withParts(
    'worker-joins',
    { workers: 2, schedulers: 1 },
    async ({ rx, fleet, dl }) => {
      const n = RATE * 25;
      const client = startClient(fleet, rx, n, { ok: 1 }, 4, { perSecond: RATE, batch: 10 });
      await waitFor(() => client.accepted.size >= RATE * 3, { timeoutMs: 60_000, intervalMs: 50, what: 'traffic flowing' });
      const from = Date.now();
      const p = fleet.spawn('worker');
      const faults: Fault[] = [{ at: from, what: `new worker ${p.child.pid}` }];
      await workersJoined(`${fleet.prefix}-workers`, 3);
      const joinedAt = Date.now();
      faults.push({ at: joinedAt, what: 'group stable with 3 members' });
      await sleep(3000);
      const to = Date.now();
      await client.done;
      const { dead_letters_on_topic: _t, unresolved, ...f } = await settle(client, rx, dl, SETTLE_MS, fleet);
      if (process.env.HOWK_CHAOS_TRACE) traceTimeline(faults, fleet.logs(), rx.gaps(from, 300), 300);
      return {
        ...f,
        recover_ms: rx.longestStall(from, to),
        notes: {
          ...(unresolved ? { unresolved } : {}),
          join_ms: joinedAt - from,
          longest_first_attempt_wait_ms: longestFirstWait(client, rx, from),
          recover: 'longest gap between deliveries from the start of the new worker to 3 s after the group is stable',
        },
      };
    },
    run,
  );
