import { describe, expect, it } from 'vitest';
import { histogramDiff, histogramQuantile, histogramsDiff, histogramSum, parseHistograms, type Histogram } from '../../core/metrics/histogram';
import { createStageRecorder } from '../../core/metrics/recorder';
import { STAGE_BUCKETS } from '../../core/metrics/stages';
import { createNodeMetrics } from '../../workers/node/metrics';

const scrape = async (m: ReturnType<typeof createNodeMetrics>, name = 'howk_stage_seconds') => parseHistograms((await m.exposition()).body, name);

describe('stage histogram buckets', () => {
  it('cover 1 ms-10 s with neighbours at most 20 % apart', () => {
    expect(STAGE_BUCKETS[0]).toBeLessThanOrEqual(0.001);
    expect(STAGE_BUCKETS[STAGE_BUCKETS.length - 1]).toBeGreaterThanOrEqual(10);
    for (let i = 1; i < STAGE_BUCKETS.length; i++) {
      expect(STAGE_BUCKETS[i]).toBeGreaterThan(STAGE_BUCKETS[i - 1]!);
      expect(STAGE_BUCKETS[i]! / STAGE_BUCKETS[i - 1]!).toBeLessThan(1.2);
    }
  });
});

describe('histogram quantiles', () => {
  const h: Histogram = { bounds: [0.01, 0.02, 0.04, Infinity], counts: [10, 30, 40, 40], sum: 0.8, count: 40 };

  it('interpolate inside the bucket, as histogram_quantile does', () => {
    expect(histogramQuantile(h, 0.25)).toBeCloseTo(0.01, 9); // rank 10: top of the first bucket
    expect(histogramQuantile(h, 0.5)).toBeCloseTo(0.015, 9); // rank 20: half-way through 10..30
    expect(histogramQuantile(h, 1)).toBeCloseTo(0.04, 9);
  });

  it('answer NaN when empty and the highest finite bound in the +Inf bucket', () => {
    expect(histogramQuantile({ bounds: [0.01, Infinity], counts: [0, 0], sum: 0, count: 0 }, 0.5)).toBeNaN();
    expect(histogramQuantile({ bounds: [0.01, Infinity], counts: [1, 10], sum: 50, count: 10 }, 0.99)).toBe(0.01);
  });

  it('of a difference count only what was observed between the scrapes', () => {
    const before: Histogram = { bounds: [0.01, 0.02, Infinity], counts: [100, 100, 100], sum: 0.5, count: 100 };
    const after: Histogram = { bounds: [0.01, 0.02, Infinity], counts: [100, 110, 110], sum: 0.68, count: 110 };
    const d = histogramDiff(after, before);
    expect(d.counts).toEqual([0, 10, 10]);
    expect(d.count).toBe(10);
    expect(d.sum).toBeCloseTo(0.18, 9);
    // Before: everything under 10 ms; the ten new ones are all in 10-20 ms.
    expect(histogramQuantile(after, 0.5)).toBeLessThan(0.01);
    expect(histogramQuantile(d, 0.5)).toBeCloseTo(0.015, 9);
  });

  it('add up series of several processes', () => {
    const a: Histogram = { bounds: [0.01, Infinity], counts: [1, 2], sum: 1, count: 2 };
    const b: Histogram = { bounds: [0.01, Infinity], counts: [3, 3], sum: 0.02, count: 3 };
    expect(histogramSum([a, b])).toEqual({ bounds: [0.01, Infinity], counts: [4, 5], sum: 1.02, count: 5 });
    expect(histogramSum([])).toBeUndefined();
  });
});

describe('the stage recorder', () => {
  it('counts a time on a bound in that bucket (le is inclusive), and n observations at once', () => {
    const { recorder, snapshot } = createStageRecorder();
    recorder.stage('sent', 1); // 0.001 s, a bound
    recorder.stage('sent', 1.0001);
    recorder.stage('committed', 7, 4);
    recorder.stage('committed', 7);
    const sent = snapshot().stages.get('sent')!;
    const at = (h: Histogram, b: number) => h.counts[h.bounds.indexOf(b)];
    expect(at(sent, 0.001)).toBe(1);
    expect(at(sent, STAGE_BUCKETS[STAGE_BUCKETS.indexOf(0.001) + 1]!)).toBe(2);
    expect(at(sent, STAGE_BUCKETS[STAGE_BUCKETS.indexOf(0.001) - 1]!)).toBe(0);
    const committed = snapshot().stages.get('committed')!;
    expect(committed.count).toBe(5);
    expect(committed.sum).toBeCloseTo(0.035, 9);
    expect(committed.counts.at(-1)).toBe(5);
    // Past the last bound: only +Inf has it.
    recorder.delivered(60_000, false);
    const first = snapshot().delivered.first;
    expect(first.counts.at(-2)).toBe(0);
    expect(first.counts.at(-1)).toBe(1);
  });
});

describe('the Prometheus exposition of the recorder', () => {
  it('shows the stages of its process at zero, then each observation in seconds', async () => {
    const m = createNodeMetrics(['produced']);
    const zero = await scrape(m);
    expect([...zero.keys()]).toEqual(['stage="produced"']);
    expect(zero.get('stage="produced"')!.count).toBe(0);

    m.stages.stage('produced', 3, 10); // a batch of ten, 3 ms each
    m.stages.stage('fetched', 250);
    m.stages.stage('fetched', -40); // clock skew: counts as 0
    const s = await scrape(m);
    expect(s.get('stage="produced"')!.count).toBe(10);
    expect(s.get('stage="produced"')!.sum).toBeCloseTo(0.03, 9);
    expect(s.get('stage="fetched"')!.count).toBe(2);
    expect(s.get('stage="fetched"')!.sum).toBeCloseTo(0.25, 9);
    const p = histogramQuantile(s.get('stage="produced"')!, 0.5);
    expect(p).toBeGreaterThan(0.0025);
    expect(p).toBeLessThanOrEqual(0.0036);
  });

  it('reads a phase as the difference of two scrapes, per series', async () => {
    const m = createNodeMetrics();
    for (let i = 0; i < 100; i++) m.stages.delivered(5, false);
    const before = await scrape(m, 'howk_enqueue_to_delivery_seconds');
    for (let i = 0; i < 100; i++) m.stages.delivered(800, false);
    m.stages.delivered(60_000, true);
    const d = histogramsDiff(await scrape(m, 'howk_enqueue_to_delivery_seconds'), before);
    const first = d.get('attempt="first"')!;
    expect(first.count).toBe(100);
    // Only the phase's 800 ms deliveries, within a bucket's width (≤ 19 %).
    for (const q of [0.5, 0.9, 0.99]) expect(Math.abs(histogramQuantile(first, q) - 0.8) / 0.8).toBeLessThan(0.19);
    expect(d.get('attempt="retry"')!.count).toBe(1);
  });
});
