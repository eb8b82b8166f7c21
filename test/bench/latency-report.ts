// What latency.bench.ts reads and prints: the stage histograms scraped from the processes'
// /metrics before and after a phase (their difference is the phase), and the tables.
import { Agent, request } from 'undici';
import { histogramQuantile, histogramsDiff, histogramSum, parseHistograms, type Histogram } from '../../core/metrics/histogram';
import { STAGES } from '../../core/metrics/stages';
import { fmt, percentile } from './busy-harness';

export type Scrape = { stages: Map<string, Histogram>[]; e2e: Map<string, Histogram>[] };
export type MetricsSource = { url: string; apiKey?: string };

/** Every source's stage and enqueue→delivery histograms (a source that does not answer counts as empty). */
export const scrapeAll = async (sources: MetricsSource[], agent: Agent): Promise<Scrape> => {
  const texts = await Promise.all(
    sources.map(async (s) => {
      try {
        const r = await request(s.url, { headers: s.apiKey ? { authorization: `Bearer ${s.apiKey}` } : {}, dispatcher: agent, headersTimeout: 5000, bodyTimeout: 5000 });
        const t = await r.body.text();
        return r.statusCode === 200 ? t : '';
      } catch {
        return '';
      }
    }),
  );
  return { stages: texts.map((t) => parseHistograms(t, 'howk_stage_seconds')), e2e: texts.map((t) => parseHistograms(t, 'howk_enqueue_to_delivery_seconds')) };
};

export type StageFigures = { name: string; count: number; p50: number; p90: number; p99: number; top: number };

/** The highest bound below which every observation fell (a histogram has no exact max). */
const topBound = (h: Histogram): number => {
  const total = h.counts.at(-1) ?? 0;
  const i = h.counts.findIndex((c) => c >= total);
  return total && i >= 0 ? h.bounds[i]! : NaN;
};

const figures = (name: string, h: Histogram | undefined): StageFigures => {
  if (!h) return { name, count: 0, p50: NaN, p90: NaN, p99: NaN, top: NaN };
  const ms = (q: number) => histogramQuantile(h, q) * 1000;
  return { name, count: h.count, p50: ms(0.5), p90: ms(0.9), p99: ms(0.99), top: topBound(h) * 1000 };
};

/** Per stage (summed over the processes), then Howk's own enqueue→delivery, over one phase. */
export const phaseStages = (before: Scrape, after: Scrape): StageFigures[] => {
  const diff = (a: Map<string, Histogram>[], b: Map<string, Histogram>[]) => a.map((m, i) => histogramsDiff(m, b[i] ?? new Map()));
  const st = diff(after.stages, before.stages);
  const e2e = diff(after.e2e, before.e2e);
  const of = (maps: Map<string, Histogram>[], key: string) => histogramSum(maps.map((m) => m.get(key)).filter((h): h is Histogram => h !== undefined && h.count > 0));
  return [...STAGES.map((s) => figures(s, of(st, `stage="${s}"`))), figures('enqueue→delivery (first attempt)', of(e2e, 'attempt="first"'))];
};

/** How many of the phase's observations of `stage` have landed (the last stages end after the receipt). */
export const stageCount = (before: Scrape, after: Scrape, stage: string): number =>
  after.stages.reduce((n, m, i) => n + (m.get(`stage="${stage}"`)?.count ?? 0) - (before.stages[i]?.get(`stage="${stage}"`)?.count ?? 0), 0);

const ms = (n: number) => (Number.isFinite(n) ? (n < 10 ? fmt(n, 1) : fmt(n)) : 'n/a');
export const latencyLine = (xs: number[]) => `p50 ${ms(percentile(xs, 50))}  p90 ${ms(percentile(xs, 90))}  p99 ${ms(percentile(xs, 99))}  max ${ms(xs.at(-1) ?? NaN)} ms`;

export const stageTable = (rows: StageFigures[]): string[] => {
  const w = Math.max(...rows.map((r) => r.name.length));
  return [
    `    ${'stage'.padEnd(w)}  ${'count'.padStart(7)}  ${'p50'.padStart(7)}  ${'p90'.padStart(7)}  ${'p99'.padStart(7)}  ${'max ≤'.padStart(7)}  (ms, from /metrics)`,
    ...rows.map(
      (r) => `    ${r.name.padEnd(w)}  ${fmt(r.count).padStart(7)}  ${ms(r.p50).padStart(7)}  ${ms(r.p90).padStart(7)}  ${ms(r.p99).padStart(7)}  ${ms(r.top).padStart(7)}`,
    ),
  ];
};

export type PhaseResult = { variant: string; mode: string; load: string; rate: number; howk?: number[]; ceiling?: number[]; stages?: StageFigures[]; loadavg: string };

/** One markdown table of every phase: client-side enqueue→receipt, Howk next to the ceiling, and Howk's stage p50s. */
export const summary = (results: PhaseResult[]): string => {
  const lat = (xs?: number[]) => (xs?.length ? `${ms(percentile(xs, 50))} / ${ms(percentile(xs, 90))} / ${ms(percentile(xs, 99))} / ${ms(xs.at(-1)!)}` : 'n/a');
  const stageP50 = (r: PhaseResult) =>
    r.stages
      ? r.stages
          .slice(0, STAGES.length)
          .map((s) => ms(s.p50))
          .join(' · ')
      : 'n/a';
  const out = [
    `| endpoints | enqueue | load | offered/s | Howk p50 / p90 / p99 / max ms | ceiling p50 / p90 / p99 / max ms | Howk stage p50s ms (${STAGES.join(' · ')}) | load 1 min |`,
    '|---|---|---:|---:|---|---|---|---|',
  ];
  for (const r of results) out.push(`| ${r.variant} | ${r.mode} | ${r.load} | ${fmt(r.rate)} | ${lat(r.howk)} | ${lat(r.ceiling)} | ${stageP50(r)} | ${r.loadavg} |`);
  return out.join('\n');
};
