// The outcome counters kept per hour (GET /stats) and per timeline bucket (GET /stats/timeline).
// They are model, not storage: the hot-state port and the timeline both name them from here.

export type StatName = 'enqueued' | 'delivered' | 'failed' | 'exhausted' | 'dead_lettered' | 'retried';
export const STAT_NAMES: readonly StatName[] = ['enqueued', 'delivered', 'failed', 'exhausted', 'dead_lettered', 'retried'];
