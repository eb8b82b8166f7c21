// Per-endpoint values with bounded cardinality: the N endpoints with the most traffic get a
// label value of their own, every other endpoint is aggregated as `other`. Memory is bounded
// too: at most `capacity` endpoints are tracked. When full, the less-counted half is dropped at
// once (one sort per capacity / 2 new endpoints, not a scan per new endpoint: 10,000 distinct
// endpoints cost ~0.1 µs per admission, not ~1.3) and a new endpoint starts from the highest
// count dropped, as in Space-Saving: an endpoint with steady traffic climbs back in, and a
// burst of one-off endpoints cannot push out a busy one.

export type EndpointEntry = {
  /** Attempts admitted (the traffic that ranks it). */
  count: number;
  /** The circuit: open until this time (ms), 0 when closed or unknown. */
  openUntil: number;
  /** Its circuit opened and no close was seen since (after openUntil: half-open). */
  tripped: boolean;
  /** Its adaptive concurrency limit as admission last saw it (NaN: never seen). */
  limit: number;
};

export type TopEndpoints = {
  /** The entry of `endpoint`, tracked from now on (counted when `hit`). */
  touch(endpoint: string, hit?: boolean): EndpointEntry;
  /** The top `n` by count, then the rest (what `other` aggregates). */
  split(): { top: [string, EndpointEntry][]; rest: EndpointEntry[] };
  size(): number;
};

export const createTopEndpoints = (n: number, capacity = Math.max(4 * n, 64)): TopEndpoints => {
  const entries = new Map<string, EndpointEntry>();
  let floor = 0;
  const shrink = () => {
    // The median count by a numeric sort of the counts alone (no tuple allocation, no comparator).
    const counts = new Float64Array(entries.size);
    let i = 0;
    for (const e of entries.values()) counts[i++] = e.count;
    counts.sort();
    const half = Math.ceil(counts.length / 2);
    const cut = counts[half - 1]!;
    let dropped = 0;
    for (const [k, e] of entries) {
      if (dropped >= half) break;
      if (e.count <= cut) {
        entries.delete(k);
        dropped++;
      }
    }
    floor = Math.max(floor, cut);
  };
  return {
    touch(endpoint, hit = false) {
      let e = entries.get(endpoint);
      if (!e) {
        if (entries.size >= capacity) shrink();
        e = { count: floor, openUntil: 0, tripped: false, limit: NaN };
        entries.set(endpoint, e);
      }
      if (hit) e.count++;
      return e;
    },
    split() {
      const all = [...entries].sort((a, b) => b[1].count - a[1].count);
      return { top: all.slice(0, n), rest: all.slice(n).map(([, e]) => e) };
    },
    size: () => entries.size,
  };
};

/** Circuit state as a gauge value: 0 closed, 1 half-open, 2 open. */
export const circuitValue = (e: EndpointEntry, now: number): number => (now < e.openUntil ? 2 : e.tripped ? 1 : 0);
