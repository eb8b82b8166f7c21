import type { Metric, Registry } from 'prom-client';
import type { Histogram } from '../../core/metrics/histogram';

export type Value = { metricName: string; labels: Record<string, string | number>; value: number };

export const histogramValues = (name: string, label: string, series: [string, Histogram][]): Value[] =>
  series.flatMap(([v, h]) => [
    ...h.bounds.map((b, i) => ({ metricName: `${name}_bucket`, labels: { [label]: v, le: b === Infinity ? '+Inf' : b }, value: h.counts[i]! })),
    { metricName: `${name}_sum`, labels: { [label]: v }, value: h.sum },
    { metricName: `${name}_count`, labels: { [label]: v }, value: h.count },
  ]);

export type MetricType = 'counter' | 'gauge' | 'histogram';

/**
 * A metric of the prom-client registry whose values are read at scrape time (the get()
 * contract of prom-client's own metrics): the pipeline adds to plain numbers, and this
 * turns them into series only when Prometheus asks.
 */
export const customMetric = (registry: Registry, name: string, help: string, type: MetricType, read: () => Value[] | Promise<Value[]>): void => {
  const metric = {
    name,
    help,
    type,
    aggregator: 'sum',
    get: async () => ({ name, help, type, aggregator: 'sum', values: await read() }),
    reset: () => {},
  };
  registry.registerMetric(metric as unknown as Metric);
};

/** Series of a counter or gauge held in a map keyed by one label's value. */
export const labelled = (name: string, label: string, m: Map<string, number>): Value[] => [...m].map(([v, value]) => ({ metricName: name, labels: { [label]: v }, value }));

export const bump = (m: Map<string, number>, key: string, n = 1): void => {
  m.set(key, (m.get(key) ?? 0) + n);
};

/** A probe that must not hold a scrape: its series, or none when it fails or takes longer than `ms`. */
export const bounded = async (read: () => Promise<Value[]>, ms = 2000): Promise<Value[]> => {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([read(), new Promise<Value[]>((r) => (timer = setTimeout(() => r([]), ms)))]);
  } catch {
    return [];
  } finally {
    clearTimeout(timer);
  }
};
