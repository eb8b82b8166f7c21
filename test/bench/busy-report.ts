// The summary of busy.bench.ts: one markdown table to paste into docs/BENCHMARKS.md, every
// Howk figure next to the zero-work ceiling's and as a ratio to it, then the slow- and
// sick-neighbour figures.
import { fmt, percentile } from './busy-harness';
import { arrivalRate, lastArrival, latencies, type EnqueueResult } from './busy-load';
import type { Sample } from './busy-probe';

export type Phase = {
  name: string;
  target: 'howk' | 'ceiling';
  load: string;
  t0: number;
  enq: EnqueueResult;
  arrivals: Map<string, number>;
  delivered: number;
  /** Records written to the slow-lane topic during the phase (Howk only). */
  slow?: number;
  samples: Sample[];
  flipAt?: number;
  duplicates: number;
  /** Arrivals during the phase of webhooks sent in earlier phases. */
  strays: number;
};
type Pair = { howk: Phase; ceiling: Phase };
export type Results = { configs: number; rate?: number; a?: Pair; b?: Pair; c0?: Pair; c1?: Pair; d?: Pair };

const isMain = (c: string) => c === 'main';
const isOdd = (c: string) => c === 'odd';
const count = (p: Phase, cls: (c: string) => boolean) => [...p.enq.ids.values()].filter((s) => cls(s.cls)).length;
const arrived = (p: Phase, cls: (c: string) => boolean) => [...p.enq.ids].filter(([id, s]) => cls(s.cls) && p.arrivals.has(id)).length;
/** Delivered/s of a class: its arrivals ÷ (first enqueue → its last arrival, or the last enqueue when later). */
const rateOf = (p: Phase, cls: (c: string) => boolean) => arrived(p, cls) / Math.max(0.001, (Math.max(lastArrival(p.arrivals, p.enq.ids, cls), p.enq.tEnd) - p.t0) / 1000);
const ratio = (a: number, b: number) => (Number.isFinite(a / b) ? `${(a / b).toFixed(2)}×` : 'n/a');
const lat = (xs: number[]) => `${fmt(percentile(xs, 50))} / ${fmt(percentile(xs, 99))}`;
const loadOf = (p: Phase) => /load averages?:\s*([\d.]+)/.exec(p.load)?.[1] ?? '?';
const undelivered = (p: Phase, cls: (c: string) => boolean) => count(p, cls) - arrived(p, cls);

type Row = { workload: string; howk: number; ceiling: number; lh: number[]; lc: number[]; slow: string; missing: number; load: string };
const row = (r: Row) =>
  `| ${r.workload} | **${fmt(r.howk)}** | ${fmt(r.ceiling)} | **${ratio(r.howk, r.ceiling)}** | ${lat(r.lh)} | ${lat(r.lc)} | ${ratio(percentile(r.lh, 99), percentile(r.lc, 99))} | ${r.slow} | ${r.missing} | ${r.load} |`;

const pairRow = (workload: string, p: Pair, cls: (c: string) => boolean, from = -Infinity, to = Infinity): Row => ({
  workload,
  howk: rateOf(p.howk, cls),
  ceiling: rateOf(p.ceiling, cls),
  lh: latencies(p.howk.arrivals, p.howk.enq.ids, cls, from, to),
  lc: latencies(p.ceiling.arrivals, p.ceiling.enq.ids, cls, from, to),
  slow: p.howk.slow === undefined ? 'n/a' : fmt(p.howk.slow),
  missing: undelivered(p.howk, cls),
  load: `${loadOf(p.howk)} / ${loadOf(p.ceiling)}`,
});

/** How the sampled limit moved after the flip: before, lowest after, time to half and to the lowest. */
const limitFigures = (p: Phase): string => {
  const s = p.samples;
  const flip = p.flipAt;
  const withLimit = s.filter((x) => x.limit !== undefined);
  const inflightAfter = s.filter((x) => flip !== undefined && x.t >= flip && x.inflight !== undefined).map((x) => x.inflight!);
  const inflight = `in-flight (GET /endpoints/:hash \`inflight\`) max ${inflightAfter.length ? Math.max(...inflightAfter) : 'n/a'} after the jump`;
  if (!withLimit.length || flip === undefined) return `limit: n/a (GET /endpoints/:hash has no limit field); ${inflight}; ${s.length} samples`;
  const before = withLimit.filter((x) => x.t < flip).slice(-4);
  const after = withLimit.filter((x) => x.t >= flip);
  const l0 = before.length ? before[before.length - 1]!.limit! : NaN;
  const low = after.length ? Math.min(...after.map((x) => x.limit!)) : NaN;
  const half = after.find((x) => x.limit! <= l0 / 2);
  const lowest = after.find((x) => x.limit === low);
  const sec = (x: Sample | undefined) => (x ? `${((x.t - flip) / 1000).toFixed(2)} s` : 'not reached');
  return `limit (\`${withLimit[0]!.limitPath}\`): ${fmt(l0)} before the jump, lowest ${fmt(low)} after; halved after ${sec(half)}, lowest after ${sec(lowest)}; ${inflight}; ${s.length} samples`;
};

/** The sampled limit and in-flight count of a run without a jump. */
const limitRange = (p: Phase): string => {
  const lim = p.samples.filter((x) => x.limit !== undefined).map((x) => x.limit!);
  const inf = p.samples.filter((x) => x.inflight !== undefined).map((x) => x.inflight!);
  const range = (xs: number[]) => (xs.length ? `${fmt(Math.min(...xs))}-${fmt(Math.max(...xs))}` : 'n/a');
  const path = p.samples.find((x) => x.limitPath)?.limitPath;
  const slow = p.samples.at(-1)?.slow ?? [];
  const counters = slow.length ? `; slow-lane counters at the end: ${slow.map(([k, v]) => `${k} ${v}`).join(', ')}` : '';
  return `limit${path ? ` (\`${path}\`)` : ''} ${range(lim)}${lim.length ? '' : ' (GET /endpoints/:hash has no limit field)'}, in-flight ${range(inf)} (${p.samples.length} samples)${counters}`;
};

export const report = (r: Results): string => {
  const out: string[] = [];
  out.push(
    '| workload | Howk delivered/s | ceiling delivered/s | Howk ÷ ceiling | Howk p50 / p99 ms | ceiling p50 / p99 ms | p99 Howk ÷ ceiling | to howk.slow | undelivered (Howk) | load 1 min (Howk / ceiling) |',
  );
  out.push('|---|---:|---:|---:|---|---|---:|---:|---:|---|');
  const notes: string[] = [];
  if (r.a) out.push(row(pairRow('(a) one endpoint URL, unpaced', r.a, () => true)));
  if (r.b) out.push(row(pairRow(`(b) ${r.configs} endpoint URLs, unpaced`, r.b, () => true)));
  if (r.a) notes.push(`(a) the busy endpoint during the Howk run: ${limitRange(r.a.howk)}`);
  if (r.c0 && r.c1) {
    const rate = `${fmt(r.rate ?? NaN)}/s`;
    const without = pairRow(`(c) ${r.configs - 1} fast, alone, ${rate}`, r.c0, isMain);
    const next = pairRow(`(c) ${r.configs - 1} fast, next to the slow one`, r.c1, isMain);
    const slow = pairRow('(c) the slow endpoint (1 s answers)', r.c1, isOdd);
    out.push(row(without), row(next), row(slow));
    const pH = percentile(next.lh, 99) / percentile(without.lh, 99);
    const pC = percentile(next.lc, 99) / percentile(without.lc, 99);
    const tail = (p: Phase) => ((lastArrival(p.arrivals, p.enq.ids, isOdd) - p.t0) / 1000).toFixed(1);
    notes.push(
      `(c) fast endpoints' p99 next to the slow one ÷ alone: **Howk ${ratio(pH, 1)}**, ceiling ${ratio(pC, 1)}. ` +
        `Slow endpoint: Howk delivered ${arrived(r.c1.howk, isOdd)}/${count(r.c1.howk, isOdd)} (last at ${tail(r.c1.howk)} s), ` +
        `ceiling ${arrived(r.c1.ceiling, isOdd)}/${count(r.c1.ceiling, isOdd)} (last at ${tail(r.c1.ceiling)} s); howk.slow records: ${r.c0.howk.slow ?? 'n/a'} alone, ${r.c1.howk.slow ?? 'n/a'} with it. ` +
        `Slow endpoint in Howk: ${limitRange(r.c1.howk)}.`,
    );
  }
  if (r.d && r.d.howk.flipAt !== undefined && r.d.ceiling.flipAt !== undefined) {
    const d = r.d;
    // Windows of equal length either side of the jump, by arrival time.
    const win = (p: Phase) => {
      const flip = p.flipAt!;
      // The first second (at most a quarter of the time before the jump) is left out: start-up.
      const w = Math.min(flip - p.t0 - Math.min(1000, (flip - p.t0) / 4), p.enq.tEnd - flip);
      return { before: arrivalRate(p.arrivals, p.enq.ids, isMain, flip - w, flip), after: arrivalRate(p.arrivals, p.enq.ids, isMain, flip, flip + w), flip };
    };
    const wh = win(d.howk);
    const wc = win(d.ceiling);
    const rowD = (label: string, cls: (c: string) => boolean, h: number, c: number, from: number, to: number, fromC: number, toC: number): Row => ({
      workload: label,
      howk: h,
      ceiling: c,
      lh: latencies(d.howk.arrivals, d.howk.enq.ids, cls, from, to),
      lc: latencies(d.ceiling.arrivals, d.ceiling.enq.ids, cls, fromC, toC),
      slow: d.howk.slow === undefined ? 'n/a' : fmt(d.howk.slow),
      missing: undelivered(d.howk, cls),
      load: `${loadOf(d.howk)} / ${loadOf(d.ceiling)}`,
    });
    out.push(row(rowD('(d) others, before the jump', isMain, wh.before, wc.before, -Infinity, wh.flip, -Infinity, wc.flip)));
    out.push(row(rowD('(d) others, after the jump', isMain, wh.after, wc.after, wh.flip, Infinity, wc.flip, Infinity)));
    out.push(row(rowD('(d) the sick endpoint (latency: sent after the jump)', isOdd, rateOf(d.howk, isOdd), rateOf(d.ceiling, isOdd), wh.flip, Infinity, wc.flip, Infinity)));
    notes.push(
      `(d) others' delivered/s after ÷ before the jump: **Howk ${ratio(wh.after, wh.before)}**, ceiling ${ratio(wc.after, wc.before)}. Sick endpoint ${limitFigures(d.howk)}.`,
    );
  }
  for (const p of [r.a, r.b, r.c0, r.c1, r.d].flatMap((x) => (x ? [x.howk, x.ceiling] : []))) {
    if (p.strays) notes.push(`${p.name} (${p.target}): ${p.strays} webhooks of earlier phases arrived during it (a backlog still draining).`);
  }
  out.push(
    '',
    'Latency is enqueue→delivery: the start of the enqueue request that carried the webhook → its first arrival at the receiver. "to howk.slow" counts the records written to the slow-lane topic during the Howk run (end offsets before/after).',
  );
  return [...out, '', ...notes.map((n) => `- ${n}`)].join('\n');
};
