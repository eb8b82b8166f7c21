import { retryUntil } from '../domain/retry-until';
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
  /** api.sync_max_waiting_per_config: one config's share of them. */
  maxPerConfig?: number;
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
  const perConfig = new Map<string, number>();
  let sub: { close(): Promise<void> } | undefined;
  let stopped = false;
  const stopping = new AbortController();

  const subscribe = async (): Promise<void> => {
    const s = await d.bus.subscribe(d.listener, (o) => deliver(o));
    if (stopped) await s.close();
    else sub = s;
  };

  const deliver = (outcomes: FirstOutcome[]) => {
    for (const o of outcomes) watched.get(o.webhook_id)?.(o);
  };

  /** A wait for a request of `configId`, or null: the instance, or the config's share, is full. */
  const reserve = (configId: string): SyncSlot | null => {
    const mine = perConfig.get(configId) ?? 0;
    if (waiting >= d.maxWaiting || mine >= (d.maxPerConfig ?? Infinity)) return null;
    perConfig.set(configId, mine + 1);
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
        const left = (perConfig.get(configId) ?? 1) - 1;
        if (left > 0) perConfig.set(configId, left);
        else perConfig.delete(configId);
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
    start: (): Promise<void> =>
      new Promise<void>((started) => {
        const once = () => subscribe().finally(started);
        void retryUntil(once, {
          baseMs: 1000,
          capMs: 30_000,
          signal: stopping.signal,
          onRetry: (e) => d.log.warn('first-outcome channel not subscribed: waits expire (202 pending) until it is', { error: errorMessage(e) }),
        }).catch(() => {});
      }),
    async stop(): Promise<void> {
      stopped = true;
      stopping.abort();
      await sub?.close();
    },
  };
};

export type SyncWaits = ReturnType<typeof createSyncWaits>;
