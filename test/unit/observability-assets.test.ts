import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config/load';
import type { Log } from '../../core/ports/log';
import type { RetrySchedule } from '../../core/ports/hot-state';
import { registerProbes } from '../../workers/node/metric-probes';
import { createNodeMetrics } from '../../workers/node/metrics';

// The Grafana dashboard and the Prometheus alert rules in infra/ name only metrics that the
// processes export: every series name in their PromQL is looked up in the registry a worker builds.

const exported = async (): Promise<Set<string>> => {
  const m = createNodeMetrics();
  const logStore = { admin: { lag: async () => [] } } as unknown as Log;
  registerProbes(m.pipeline, loadConfig({ env: {} }), { logStore, hot: { retryCount: async () => 0 } as unknown as RetrySchedule, worker: true });
  const names = new Set<string>();
  for (const metric of m.registry.getMetricsAsArray()) {
    const { name, type } = await (metric as unknown as { get(): Promise<{ name: string; type: string }> }).get();
    names.add(name);
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(name + s);
  }
  return names;
};

const FUNCS = new Set(['sum', 'max', 'min', 'avg', 'rate', 'increase', 'deriv', 'histogram_quantile', 'by', 'and', 'or', 'offset', 'le']);
/** Series names in a PromQL expression: identifiers not inside a label matcher, not functions or keywords. */
const seriesIn = (expr: string): string[] =>
  [
    ...expr
      .replace(/\{[^}]*\}/g, '{}')
      .replace(/\b(by|without)\s*\([^)]*\)/g, '')
      .matchAll(/\b([a-z_:][a-z0-9_:]*)\b(?!\s*\()/gi),
  ]
    .map((m) => m[1]!)
    .filter((n) => !FUNCS.has(n) && !/^\d/.test(n) && /_/.test(n));

describe('infra/grafana and infra/prometheus', () => {
  it('the dashboard queries only exported metrics', async () => {
    const names = await exported();
    const dash = JSON.parse(readFileSync('infra/grafana/howk.json', 'utf8')) as { panels: { title: string; targets: { expr: string }[] }[] };
    const used = dash.panels.flatMap((p) => p.targets.flatMap((t) => seriesIn(t.expr).map((n) => [p.title, n] as const)));
    expect(used.length).toBeGreaterThan(20);
    for (const [title, n] of used) expect(names.has(n), `${title}: ${n}`).toBe(true);
    // Every howk_ family is on the dashboard.
    const shown = new Set(used.map(([, n]) => n.replace(/_(bucket|sum|count)$/, '')));
    for (const n of names) if (n.startsWith('howk_') && !/_(bucket|sum|count)$/.test(n)) expect(shown.has(n), n).toBe(true);
  });

  it('the alert rules are valid rule groups over exported metrics, with the four required alerts', async () => {
    const names = await exported();
    const doc = parse(readFileSync('infra/prometheus/alerts.yml', 'utf8')) as {
      groups: { name: string; rules: { alert: string; expr: string; labels: object; annotations: object }[] }[];
    };
    const rules = doc.groups.flatMap((g) => g.rules);
    for (const r of rules) {
      expect(r.alert).toMatch(/^Howk[A-Za-z]+$/);
      expect(r.labels).toHaveProperty('severity');
      expect(r.annotations).toHaveProperty('summary');
      for (const n of seriesIn(r.expr)) expect(names.has(n), `${r.alert}: ${n}`).toBe(true);
    }
    const refs = (alert: string) => seriesIn(rules.find((r) => r.alert === alert)!.expr);
    expect(refs('HowkDeadLettersRising')).toContain('howk_dead_letters_total');
    expect(refs('HowkConsumerLagGrowing')).toContain('howk_consumer_lag');
    expect(refs('HowkCircuitsOpen')).toContain('howk_circuit_state');
    expect(refs('HowkRedisRebuilt')).toContain('howk_redis_rebuilds_total');
    expect(refs('HowkOrphanedRetriesRepaired')).toContain('howk_orphaned_retries_repaired_total');
  });
});
