// Figures and summary of e2e.bench.ts: throughput, latency, the per-config step, duplicates,
// signatures, Howk's own counters, and the CPU table (e2e-cpu.ts).
import { fmt, gitRevision, percentile } from './busy-harness';
import type { EnqueueResult } from './busy-load';
import type { E2eReceiver } from './e2e-receiver';

export type E2eSettings = {
  mode: 'batch' | 'single';
  batch: number;
  concurrency: number;
  configs: number;
  origins: number;
  rate: number;
  n: number;
  prefill: boolean;
  target: number;
};
export type E2eRun = {
  runId: string;
  enq: EnqueueResult;
  rx: E2eReceiver;
  /** performance.now(): first enqueue, last enqueue answered, worker started (prefill), window end. */
  tStart: number;
  tEnqEnd: number;
  tWorker: number;
  tEnd: number;
  stats: string;
  outcomesMs: number | undefined;
};

/** Sorted enqueue→receipt latencies, first and last arrival, and the per-config steps. */
const figures = (r: E2eRun) => {
  const lat: number[] = [];
  let lastArrival = r.tStart;
  let firstArrival = Infinity;
  // Webhooks of one batch request share a config id, so the worker delivers them one after
  // the other (per-config order): the gaps between their arrivals are its per-webhook step.
  const byRequest = new Map<number, number[]>();
  for (const [id, { start }] of r.enq.ids) {
    const at = r.rx.arrivals.get(id);
    if (at === undefined) continue;
    lat.push(at - start);
    if (at > lastArrival) lastArrival = at;
    if (at < firstArrival) firstArrival = at;
    const g = byRequest.get(start);
    if (g) g.push(at);
    else byRequest.set(start, [at]);
  }
  lat.sort((a, b) => a - b);
  const gaps: number[] = [];
  for (const g of byRequest.values()) {
    g.sort((a, b) => a - b);
    for (let i = 1; i < g.length; i++) gaps.push(g[i]! - g[i - 1]!);
  }
  gaps.sort((a, b) => a - b);
  return { lat, gaps, firstArrival, lastArrival };
};

/** Prints the summary; returns how many accepted webhooks arrived (first delivery). */
export const printE2eReport = (s: E2eSettings, r: E2eRun, cpuRowsOf: (delivered: number) => [string, string][]): number => {
  const { lat, gaps, firstArrival, lastArrival } = figures(r);
  const { enq } = r;
  const c = r.rx.counts();
  const delivered = lat.length;
  const wallS = (r.tEnd - r.tStart) / 1000;
  const enqS = (r.tEnqEnd - r.tStart) / 1000;
  // Prefill: the drain, from the worker's first delivery to its last.
  const delS = (s.prefill ? lastArrival - Math.min(firstArrival, lastArrival) : lastArrival - r.tStart) / 1000 || NaN;
  const strangers = [...r.rx.arrivals.keys()].filter((id) => !enq.ids.has(id)).length;
  const rows: [string, string][] = [
    [
      'mode',
      `${s.prefill ? 'PREFILL (worker started after the enqueue), ' : ''}${s.mode}${s.mode === 'batch' ? ` (${s.batch}/request)` : ''}, ${s.concurrency} requests in flight, ${s.configs} config ids, ${s.origins} receiver origin${s.origins > 1 ? 's' : ''}, rate ${s.rate ? `${fmt(s.rate)}/s` : 'unpaced'}`,
    ],
    ['webhooks accepted (202)', `${fmt(enq.accepted)} of ${fmt(s.n)} in ${fmt(enq.requests)} requests (${enq.retries} retried, ${enq.failures} failed)`],
    ['enqueue throughput', `${fmt(enq.accepted / enqS)} webhooks/s (${enqS.toFixed(2)} s)`],
    ['delivered (first, unique)', `${fmt(delivered)} of ${fmt(enq.ids.size)}${strangers ? ` (+${strangers} unknown ids)` : ''}`],
    s.prefill
      ? [
          'delivery throughput',
          `${fmt(delivered / delS)} webhooks/s (drain: first → last delivery ${delS.toFixed(2)} s; first delivery ${fmt(firstArrival - r.tWorker)} ms after the worker started)`,
        ]
      : ['delivery throughput', `${fmt(delivered / delS)} webhooks/s (first enqueue → last delivery ${delS.toFixed(2)} s)`],
    s.prefill
      ? ['latency enqueue→receipt', 'n/a in prefill mode (every webhook waits for the worker to start)']
      : [
          'latency enqueue→receipt',
          `p50 ${fmt(percentile(lat, 50))} ms   p90 ${fmt(percentile(lat, 90))} ms   p99 ${fmt(percentile(lat, 99))} ms   max ${fmt(lat[lat.length - 1] ?? NaN)} ms`,
        ],
    s.mode === 'batch' && s.batch > 1
      ? [
          'per-config step',
          `p50 ${fmt(percentile(gaps, 50), 2)} ms   p90 ${fmt(percentile(gaps, 90), 2)} ms   (gap between consecutive deliveries of one batch request: one config, delivered in order)`,
        ]
      : ['per-config step', 'n/a (single mode)'],
    ['duplicate deliveries', `${c.duplicates} (${fmt(c.received)} requests received)`],
    ['signatures verified', `${c.sampled - c.badSignatures}/${c.sampled} sampled OK`],
    ['howk /stats (incl. warm-up)', r.stats],
    ['outcomes recorded', r.outcomesMs === undefined ? 'not all within 30 s of the last delivery' : `${fmt(r.outcomesMs)} ms after the last delivery (the CPU window ends here)`],
  ];
  const cpuRows = cpuRowsOf(delivered);
  const w = Math.max(...[...rows, ...cpuRows].map(([k]) => k.length));
  const line = (k: string, v: string) => `  ${k.padEnd(w)}  ${v}`;
  console.log(`\nHowk end-to-end benchmark  (${r.runId}, ${new Date().toISOString()}, commit ${gitRevision()})`);
  console.log(rows.map(([k, v]) => line(k, v)).join('\n'));
  console.log(`  CPU over the measured ${wallS.toFixed(1)} s:`);
  console.log(cpuRows.map(([k, v]) => line(`  ${k}`, v)).join('\n'));
  const rate = delivered / delS;
  console.log(`  target ${fmt(s.target)}/s delivered: ${rate >= s.target ? 'MET' : 'NOT MET'}`);
  console.log('');
  return delivered;
};
