import { collectDefaultMetrics, Histogram, Registry } from 'prom-client';
import { STAGE_BUCKETS, STAGES, type Stage, type StageRecorder } from '../../core/metrics/stages';

export type NodeMetrics = {
  registry: Registry;
  /** The recorder the pipeline is given (core/metrics/stages.ts). */
  stages: StageRecorder;
  /** The Prometheus text exposition of every metric of this process. */
  exposition: () => Promise<{ contentType: string; body: string }>;
};

/**
 * Prometheus metrics of one process: the delivery stages, enqueue→delivery, and prom-client's
 * process and Node.js metrics (CPU, memory, event loop lag). `stages` are the ones this
 * process records: they are shown at zero before the first observation.
 */
export const createNodeMetrics = (stages: readonly Stage[] = STAGES): NodeMetrics => {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const buckets = [...STAGE_BUCKETS];
  const stage = new Histogram({ name: 'howk_stage_seconds', help: 'Time each delivery spent in each stage: since the previous stage ended (docs/OPERATIONS.md, Metrics)', labelNames: ['stage'], buckets, registers: [registry] });
  const e2e = new Histogram({ name: 'howk_enqueue_to_delivery_seconds', help: 'created_at of a delivered webhook → its 2xx response received; attempt="retry" after a failed or deferred attempt', labelNames: ['attempt'], buckets, registers: [registry] });
  // Bound children: no label lookup per observation.
  const byStage = new Map(STAGES.map((s) => [s, stage.labels({ stage: s })]));
  for (const s of stages) stage.zero({ stage: s });
  const first = e2e.labels({ attempt: 'first' });
  const retry = e2e.labels({ attempt: 'retry' });
  if (stages.includes('responded')) {
    e2e.zero({ attempt: 'first' });
    e2e.zero({ attempt: 'retry' });
  }
  // Clock skew between hosts can make a cross-process stage negative: it counts as 0.
  const sec = (ms: number) => (ms > 0 ? ms / 1000 : 0);
  return {
    registry,
    stages: {
      stage(s, ms, n = 1) {
        const h = byStage.get(s)!;
        const v = sec(ms);
        for (let i = 0; i < n; i++) h.observe(v);
      },
      delivered(ms, isRetry) {
        (isRetry ? retry : first).observe(sec(ms));
      },
    },
    exposition: async () => ({ contentType: registry.contentType, body: await registry.metrics() }),
  };
};
