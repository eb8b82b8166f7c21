// Connections of the worker's own pool, per origin. A delivery takes a slot BEFORE it asks
// admission and keeps it until its answer is in: so what admission counts in flight is on
// the wire, and a webhook waiting for a connection of this worker is queued here, not
// counted. The number of slots follows the endpoint's adaptive limit (what admission last
// reported for the origin) up to the pool's size (delivery.max_conns_per_host).

export type OriginSlots = {
  /** Resolves once a slot is free; call the returned function to give it back (once). */
  acquire(origin: string): Promise<() => void>;
  /** A slot now if one is free and nobody waits (no promise, no turn of the event loop), else undefined. */
  take(origin: string): (() => void) | undefined;
  /** Sets the origin's slots to min(n, pool size), at least 1. */
  resize(origin: string, n: number): void;
  /** Slots of the origin, and deliveries holding / waiting for one. */
  stats(origin: string): { size: number; active: number; waiting: number };
};

type Origin = { size: number; active: number; queue: (() => void)[] };

export const createOriginSlots = (poolSize: number, initial = poolSize): OriginSlots => {
  const origins = new Map<string, Origin>();
  const of = (origin: string): Origin => {
    let o = origins.get(origin);
    if (!o) origins.set(origin, (o = { size: Math.max(1, Math.min(poolSize, initial)), active: 0, queue: [] }));
    return o;
  };
  // Hands freed (or added) slots to waiters in arrival order; an idle origin is forgotten.
  const pump = (origin: string, o: Origin) => {
    while (o.active < o.size && o.queue.length) {
      o.active++;
      o.queue.shift()!();
    }
    if (!o.active && !o.queue.length) origins.delete(origin);
  };
  const releaser = (origin: string, o: Origin) => {
    let given = false;
    return () => {
      if (given) return;
      given = true;
      o.active--;
      pump(origin, o);
    };
  };
  const take = (origin: string): (() => void) | undefined => {
    const o = of(origin);
    if (o.active >= o.size || o.queue.length) return undefined;
    o.active++;
    return releaser(origin, o);
  };
  return {
    acquire(origin) {
      const now = take(origin);
      if (now) return Promise.resolve(now);
      const o = of(origin);
      return new Promise((resolve) => o.queue.push(() => resolve(releaser(origin, o))));
    },
    take,
    resize(origin, n) {
      const o = origins.get(origin);
      if (!o) return;
      o.size = Math.max(1, Math.min(poolSize, Math.floor(n)));
      pump(origin, o);
    },
    stats(origin) {
      const o = origins.get(origin);
      return { size: o?.size ?? Math.max(1, Math.min(poolSize, initial)), active: o?.active ?? 0, waiting: o?.queue.length ?? 0 };
    },
  };
};
