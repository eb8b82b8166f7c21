import { errorMessage } from '../errors/errors';
import { noDoorMeter, type DoorMeter } from '../metrics/door';
import type { Logger } from '../ports/logger';
import type { FirstOutcome, OutcomeBus } from '../ports/outcome-bus';

export type SyncWaitDeps = {
  bus: OutcomeBus;
  /** This api instance's id on the bus: the `awaited_by` of the webhooks it waits for. */
  listener: string;
  /** api.sync_max_waiting: requests waiting at once. */
  maxWaiting: number;
  log: Logger;
  meter?: DoorMeter;
};

/** One request's wait: its webhooks are watched before they are produced, so that no outcome can come first. */
export type SyncSlot = {
  watch(ids: readonly string[]): void;
  /** Resolves with the outcomes known when every watched webhook has one, when `ms` has passed, or when `signal` aborts (the client went away). */
  wait(ms: number, signal?: AbortSignal): Promise<Map<string, FirstOutcome>>;
  release(): void;
};

/**
 * The waits of one api instance: at most maxWaiting requests at once, each woken by the
 * messages of its listener channel (no polling). A webhook id is watched by the one request
 * that enqueued it, so a request only ever learns the outcomes of its own webhooks.
 */
export const createSyncWaits = (d: SyncWaitDeps) => {
  const meter = d.meter ?? noDoorMeter;
  const watched = new Map<string, (o: FirstOutcome) => void>();
  let waiting = 0;
  let sub: { close(): Promise<void> } | undefined;
  let stopped = false;
  let retry: ReturnType<typeof setTimeout> | undefined;

  const trySubscribe = async (): Promise<boolean> => {
    try {
      const s = await d.bus.subscribe(d.listener, (o) => deliver(o));
      if (stopped) await s.close();
      else sub = s;
      return true;
    } catch (e) {
      d.log.warn('first-outcome channel not subscribed: waits expire (202 pending) until it is', { error: errorMessage(e) });
      return false;
    }
  };
  const retrySubscribe = async (): Promise<void> => {
    for (let wait = 1000; !stopped; wait = Math.min(wait * 2, 30_000)) {
      await new Promise((r) => (retry = setTimeout(r, wait)));
      if (stopped || (await trySubscribe())) return;
    }
  };

  const deliver = (outcomes: FirstOutcome[]) => {
    for (const o of outcomes) watched.get(o.webhook_id)?.(o);
  };

  const reserve = (): SyncSlot | null => {
    if (waiting >= d.maxWaiting) return null;
    meter.waiting(++waiting);
    const ids: string[] = [];
    const got = new Map<string, FirstOutcome>();
    let wake: (() => void) | undefined;
    let released = false;
    return {
      watch(list) {
        for (const id of list) {
          ids.push(id);
          watched.set(id, (o) => {
            got.set(id, o);
            if (got.size >= ids.length) wake?.();
          });
        }
      },
      wait: (ms, signal) =>
        new Promise((resolve) => {
          if (!ids.length || got.size >= ids.length || signal?.aborted) return resolve(got);
          const end = () => {
            clearTimeout(timer);
            signal?.removeEventListener('abort', end);
            resolve(got);
          };
          const timer = setTimeout(end, ms);
          signal?.addEventListener('abort', end);
          wake = end;
        }),
      release() {
        if (released) return;
        released = true;
        for (const id of ids) watched.delete(id);
        meter.waiting(--waiting);
      },
    };
  };

  return {
    listener: d.listener,
    reserve,
    /**
     * Subscribes to this instance's channel. A failure (Redis away at start) does not stop the
     * api: it tries again in the background, and until then waits simply expire (202 pending).
     */
    async start(): Promise<void> {
      if (!(await trySubscribe())) void retrySubscribe();
    },
    async stop(): Promise<void> {
      stopped = true;
      clearTimeout(retry);
      await sub?.close();
    },
  };
};

export type SyncWaits = ReturnType<typeof createSyncWaits>;
