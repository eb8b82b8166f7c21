import type { WebhookStatus } from '../domain/status';
import type { WebhookListing } from '../ports/hot-state';

// Live updates for GET /webhooks/events: ONE poll loop per process, whatever the number of
// subscribers. Each tick reads the newest `pageSize` webhooks of every config somebody
// watches (one listing call per config, not per subscriber) and hands the rows that are new
// or changed since the previous tick (updated_at_ns moved) to that config's subscribers.
// A change to a webhook older than the newest `pageSize` of its config is not seen live (a
// reload of the listing shows it); docs/CONSOLE.md says so.

/** `rows`: new or changed webhooks, oldest change first; `end`: the feed closed (the process stops). */
export type ChangeListener = { rows: (rows: WebhookStatus[]) => void; end: () => void };

export type ChangeFeedOptions = {
  listing: Pick<WebhookListing, 'listWebhooks'>;
  /** Most open subscriptions; subscribe answers 'full' beyond it. */
  maxSubscribers: number;
  /** Most open subscriptions of one config (a tenant's share of maxSubscribers); subscribe answers 'share' beyond it. */
  maxPerConfig?: number;
  intervalMs?: number;
  pageSize?: number;
  /** How often a subscriber's stream sends a comment when nothing changed (keeps proxies from closing it). */
  heartbeatMs?: number;
  /** How long one stream lasts before the server ends it (the browser's EventSource reconnects). */
  lifetimeMs?: number;
  /** Reports a failed poll (the loop carries on at the next tick). */
  onError?: (e: unknown) => void;
};

export type ChangeFeed = {
  /**
   * Listens to one config's changes; returns the unsubscribe, or why not: 'full' (the process's
   * limit, or the feed closed), 'share' (the config has its share open already).
   */
  subscribe(configId: string, fn: ChangeListener): (() => void) | 'full' | 'share';
  subscribers(): number;
  heartbeatMs: number;
  lifetimeMs: number;
  /** Ends every subscription and the poll loop; later subscriptions are refused. */
  close(): void;
};

type Watched = { listeners: Set<ChangeListener>; seen: Map<string, string> | null };

export const createChangeFeed = (o: ChangeFeedOptions): ChangeFeed => {
  const interval = o.intervalMs ?? 1000;
  const pageSize = o.pageSize ?? 100;
  const configs = new Map<string, Watched>();
  let count = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let closed = false;

  const pollConfig = async (configId: string, w: Watched) => {
    const page = await o.listing.listWebhooks({ configId, limit: pageSize });
    const first = w.seen === null;
    const seen = new Map(page.items.map((s) => [s.webhook_id, s.updated_at_ns]));
    // The first read of a config is the baseline: a subscriber loads the listing itself.
    const changed = first ? [] : page.items.filter((s) => w.seen!.get(s.webhook_id) !== s.updated_at_ns).reverse();
    w.seen = seen;
    if (changed.length) for (const l of w.listeners) l.rows(changed);
  };

  const tick = async () => {
    timer = undefined;
    await Promise.all([...configs].map(([id, w]) => pollConfig(id, w).catch((e) => o.onError?.(e))));
    if (!closed && count > 0 && timer === undefined) timer = setTimeout(() => void tick(), interval);
  };

  return {
    subscribe(configId, fn) {
      if (closed || count >= o.maxSubscribers) return 'full';
      const w = configs.get(configId) ?? { listeners: new Set(), seen: null };
      if (w.listeners.size >= (o.maxPerConfig ?? Infinity)) return 'share';
      configs.set(configId, w);
      w.listeners.add(fn);
      count++;
      if (timer === undefined) timer = setTimeout(() => void tick(), 0);
      let done = false;
      return () => {
        if (done) return;
        done = true;
        w.listeners.delete(fn);
        count--;
        if (!w.listeners.size) configs.delete(configId);
        if (count === 0 && timer !== undefined) {
          clearTimeout(timer);
          timer = undefined;
        }
      };
    },
    subscribers: () => count,
    heartbeatMs: o.heartbeatMs ?? 15_000,
    lifetimeMs: o.lifetimeMs ?? 15 * 60_000,
    close() {
      closed = true;
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      for (const w of [...configs.values()]) for (const l of [...w.listeners]) l.end();
    },
  };
};
