/**
 * The worker's pool for an origin follows the largest limit among its endpoints (up to the
 * pool's size): a slow endpoint with a small limit must not throttle a fast one beside it.
 * The largest is kept with the map and recomputed only when the endpoint that held it lowers
 * its limit or leaves: this runs at every admission. Bounded: 10,000 origins, 100 endpoints each.
 */
export const createOriginLimits = () => {
  const limits = new Map<string, { m: Map<string, number>; max: number }>();
  return (origin: string, hash: string, limit: number): number => {
    let o = limits.get(origin);
    if (!o) {
      if (limits.size >= 10_000) limits.delete(limits.keys().next().value as string);
      limits.set(origin, (o = { m: new Map(), max: 0 }));
    }
    const { m } = o;
    const prev = m.get(hash);
    m.delete(hash); // newest last: the oldest endpoint goes first past 100
    m.set(hash, limit);
    let stale = prev === o.max && limit < prev;
    if (m.size > 100) {
      const oldest = m.keys().next().value as string;
      stale ||= m.get(oldest) === o.max;
      m.delete(oldest);
    }
    if (stale) {
      let max = 0;
      for (const v of m.values()) if (v > max) max = v;
      o.max = max;
    } else if (limit > o.max) o.max = limit;
    return o.max;
  };
};
