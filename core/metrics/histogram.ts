// Reading histograms back from the Prometheus text format: a scrape before and after a run,
// their difference, and quantiles of it as histogram_quantile computes them. Used by the
// latency benchmark and the tests; pure, so any runtime can read a /metrics page.

/** One histogram series: cumulative counts per upper bound (ascending, +Inf last). */
export type Histogram = { bounds: number[]; counts: number[]; sum: number; count: number };

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

const labelsOf = (text: string | undefined): [string, string][] => {
  const out: [string, string][] = [];
  if (!text) return out;
  for (const m of text.matchAll(LABEL)) out.push([m[1]!, m[2]!]);
  return out;
};

/** The series key: labels other than `le`, sorted, as `a="x",b="y"` ('' when none). */
const keyOf = (labels: [string, string][]): string =>
  labels
    .filter(([k]) => k !== 'le')
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}="${v}"`)
    .join(',');

const num = (s: string): number => (s === '+Inf' ? Infinity : s === '-Inf' ? -Infinity : Number(s));

/** Every series of histogram `name` in a text exposition, by label key. */
export const parseHistograms = (text: string, name: string): Map<string, Histogram> => {
  const out = new Map<string, Histogram>();
  const get = (key: string) => {
    let h = out.get(key);
    if (!h) out.set(key, (h = { bounds: [], counts: [], sum: 0, count: 0 }));
    return h;
  };
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = LINE.exec(line);
    if (!m) continue;
    const [, metric, labelText, value] = m;
    const labels = labelsOf(labelText);
    if (metric === `${name}_bucket`) {
      const h = get(keyOf(labels));
      h.bounds.push(num(labels.find(([k]) => k === 'le')?.[1] ?? '+Inf'));
      h.counts.push(num(value!));
    } else if (metric === `${name}_sum`) get(keyOf(labels)).sum = num(value!);
    else if (metric === `${name}_count`) get(keyOf(labels)).count = num(value!);
  }
  for (const h of out.values()) {
    const order = h.bounds.map((_, i) => i).sort((a, b) => h.bounds[a]! - h.bounds[b]!);
    h.bounds = order.map((i) => h.bounds[i]!);
    h.counts = order.map((i) => h.counts[i]!);
  }
  return out;
};

/** What was observed between two scrapes of one series (`before` absent: nothing yet). */
export const histogramDiff = (after: Histogram, before?: Histogram): Histogram => {
  if (!before) return { bounds: [...after.bounds], counts: [...after.counts], sum: after.sum, count: after.count };
  const prior = new Map(before.bounds.map((b, i) => [b, before.counts[i]!]));
  return {
    bounds: [...after.bounds],
    counts: after.counts.map((c, i) => Math.max(0, c - (prior.get(after.bounds[i]!) ?? 0))),
    sum: after.sum - before.sum,
    count: Math.max(0, after.count - before.count),
  };
};

/** Series-by-series difference of two parses (series new in `after` count from zero). */
export const histogramsDiff = (after: Map<string, Histogram>, before: Map<string, Histogram>): Map<string, Histogram> =>
  new Map([...after].map(([k, h]) => [k, histogramDiff(h, before.get(k))]));

/** Sum of several series with the same bounds (e.g. one stage scraped from two processes). */
export const histogramSum = (hs: Histogram[]): Histogram | undefined => {
  if (!hs.length) return undefined;
  const [first, ...rest] = hs;
  const acc = histogramDiff(first!);
  for (const h of rest) {
    h.bounds.forEach((b, i) => {
      const j = acc.bounds.indexOf(b);
      if (j >= 0) acc.counts[j]! += h.counts[i]!;
    });
    acc.sum += h.sum;
    acc.count += h.count;
  }
  return acc;
};

/**
 * The q-quantile (0..1) of a histogram, interpolated linearly inside its bucket as
 * Prometheus' histogram_quantile does; NaN when empty. In the +Inf bucket it is the highest
 * finite bound (all one can say).
 */
export const histogramQuantile = (h: Histogram, q: number): number => {
  const total = h.counts.length ? h.counts[h.counts.length - 1]! : 0;
  if (!total) return NaN;
  const rank = q * total;
  for (let i = 0; i < h.bounds.length; i++) {
    if (h.counts[i]! < rank) continue;
    const upper = h.bounds[i]!;
    if (upper === Infinity) return i > 0 ? h.bounds[i - 1]! : NaN;
    const lower = i > 0 ? h.bounds[i - 1]! : 0;
    const below = i > 0 ? h.counts[i - 1]! : 0;
    const inBucket = h.counts[i]! - below;
    return inBucket > 0 ? lower + (upper - lower) * ((rank - below) / inBucket) : upper;
  }
  return h.bounds[h.bounds.length - 1]!;
};
