import { collectDefaultMetrics, Counter, Gauge, Registry, type Metric } from 'prom-client';
import type { DoorMeter } from '../../core/metrics/door';
import type { Histogram } from '../../core/metrics/histogram';
import { createStageRecorder } from '../../core/metrics/recorder';
import { STAGES, type Stage, type StageRecorder } from '../../core/metrics/stages';
import { registerPipelineMetrics, type PipelineMetrics } from './pipeline-metrics';
import { histogramValues } from './prom-custom';

export type NodeMetrics = {
  registry: Registry;
  /** The recorder the pipeline is given (core/metrics/recorder.ts). */
  stages: StageRecorder;
  /** What the api's door reports (core/metrics/door.ts). */
  door: DoorMeter;
  /** Counters and gauges of the pipeline, the endpoints, Kafka, Redis and Lua (workers/node/pipeline-metrics.ts). */
  pipeline: PipelineMetrics;
  /** The Prometheus text exposition of every metric of this process. */
  exposition: () => Promise<{ contentType: string; body: string }>;
};

/**
 * A histogram of the prom-client registry whose values come from `read` at scrape time
 * (prom-client renders it as any other metric: the get() contract of its own metrics).
 */
const histogramMetric = (registry: Registry, name: string, help: string, label: string, read: () => [string, Histogram][]): void => {
  const metric = {
    name,
    help,
    type: 'histogram',
    aggregator: 'sum',
    get: async () => ({ name, help, type: 'histogram', aggregator: 'sum', values: histogramValues(name, label, read()) }),
    reset: () => {},
  };
  registry.registerMetric(metric as unknown as Metric);
};

/** Configs whose outstanding gauge is kept: the most recently read ones. */
const MAX_CONFIG_SERIES = 1000;

const doorMeter = (registry: Registry): DoorMeter => {
  const inflight = new Gauge({ name: 'howk_api_inflight_requests', help: 'Requests this api instance has in hand (api.max_inflight_requests)', registers: [registry] });
  const waiting = new Gauge({ name: 'howk_api_sync_waiting', help: 'Enqueue requests waiting for their first attempt (api.sync_max_waiting)', registers: [registry] });
  const refused = new Counter({
    name: 'howk_api_refused_total',
    help: 'Requests answered at once: reason="inflight" (503), "outstanding" (429), "wait_busy" (a wait not granted, 202)',
    labelNames: ['reason'],
    registers: [registry],
  });
  const outstanding = new Gauge({
    name: 'howk_config_outstanding',
    help: 'Webhooks of a config accepted and not yet terminal, as last read by this api instance (an enqueue under api.max_outstanding_per_config, GET /configs/:config/status)',
    labelNames: ['config'],
    registers: [registry],
  });
  const seen = new Set<string>();
  return {
    inflight: (n) => inflight.set(n),
    waiting: (n) => waiting.set(n),
    refused: (reason) => refused.inc({ reason }),
    outstanding: (config, n) => {
      seen.delete(config);
      seen.add(config);
      if (seen.size > MAX_CONFIG_SERIES) {
        const oldest = seen.values().next().value as string;
        seen.delete(oldest);
        outstanding.remove({ config: oldest });
      }
      outstanding.set({ config }, n);
    },
  };
};

/**
 * Prometheus metrics of one process: the delivery stages, enqueue→delivery, and prom-client's
 * process and Node.js metrics (CPU, memory, event loop lag). `stages` are the ones this
 * process records: they are shown (at zero) from the start; the others once observed.
 */
export const createNodeMetrics = (stages: readonly Stage[] = STAGES, opts: { topEndpoints?: number } = {}): NodeMetrics => {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const { recorder, snapshot } = createStageRecorder();
  const pipeline = registerPipelineMetrics(registry, opts.topEndpoints ?? 20);
  const shown = new Set<Stage>(stages);
  const delivers = stages.includes('responded');
  histogramMetric(registry, 'howk_stage_seconds', 'Time each delivery spent in each stage: since the previous stage ended (docs/OPERATIONS.md, Metrics)', 'stage', () =>
    [...snapshot().stages].filter(([s, h]) => shown.has(s) || h.count > 0),
  );
  histogramMetric(
    registry,
    'howk_enqueue_to_delivery_seconds',
    'created_at of a delivered webhook → its 2xx response received; attempt="retry" after a failed or deferred attempt',
    'attempt',
    () => {
      const { first, retry } = snapshot().delivered;
      return (
        [
          ['first', first],
          ['retry', retry],
        ] as [string, Histogram][]
      ).filter(([, h]) => delivers || h.count > 0);
    },
  );
  return {
    registry,
    stages: recorder,
    door: doorMeter(registry),
    pipeline,
    exposition: async () => ({ contentType: registry.contentType, body: await registry.metrics() }),
  };
};
