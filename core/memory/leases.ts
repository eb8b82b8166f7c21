// howk-dev's in-flight leases of an endpoint or a host, on maps: the same bookkeeping as the
// Redis zsets the admission and completion scripts keep.

/** In-flight leases of one endpoint or host: webhook id → when the lease runs out (as the Redis zset). */
export type Leases = Map<string, number>;

/** Leases in force at `now`. */
export const count = (m: Map<string, Leases>, k: string, now: number): number => {
  let n = 0;
  for (const until of m.get(k)?.values() ?? []) if (until > now) n++;
  return n;
};

/** Drops the leases that ran out by `now` (ZREMRANGEBYSCORE), where admitDelivery.lua does; returns those in force. */
export const prune = (m: Map<string, Leases>, k: string, now: number): number => {
  const l = m.get(k);
  if (!l) return 0;
  for (const [id, until] of l) if (until <= now) l.delete(id);
  if (!l.size) m.delete(k);
  return l.size;
};

/**
 * Whether `id` must wait at `limit`: the leases in force (expired ones dropped) fill it, and `id`
 * holds none of them. One that does is a copy of a delivery already counted (a webhook consumed
 * again after its worker died) and takes its lease over (admitDelivery.lua `holds`).
 */
export const atLimit = (m: Map<string, Leases>, k: string, now: number, limit: number, id: string): boolean => prune(m, k, now) >= limit && !(m.get(k)?.has(id) ?? false);

/** When `id`'s lease in force at `now` runs out, if it holds one. */
export const heldUntil = (m: Map<string, Leases>, k: string, id: string, now: number): number | undefined => {
  const until = m.get(k)?.get(id);
  return until !== undefined && until > now ? until : undefined;
};

export const lease = (m: Map<string, Leases>, k: string, id: string, now: number, ms: number): void => {
  prune(m, k, now);
  const l = m.get(k) ?? new Map<string, number>();
  m.set(k, l);
  l.set(id, now + ms);
};

export const endLease = (m: Map<string, Leases>, k: string, id: string): void => {
  const l = m.get(k);
  l?.delete(id);
  if (l && !l.size) m.delete(k);
};

export const renewLease = (m: Map<string, Leases>, k: string, id: string, now: number, ms: number): void => {
  const l = m.get(k);
  if (l?.has(id)) l.set(id, now + ms);
};
