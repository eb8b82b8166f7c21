// The Overview's numbers in words: the aria-live summary and the tiles' texts (pure).

export type Counts = { enqueued: number; delivered: number; failed: number; dead_lettered: number };
export type Bucket = Counts & { start: string; exhausted: number; retried: number };
export type Timeline = { window: '1h' | '24h'; bucket_seconds: number; buckets: Bucket[] };
export type Gauges = { retry_queue: number | null; in_flight: number | null; slow_lane: number | null; consumer_lag: number | null; open_circuits: number | null };

export const SERIES: { key: keyof Counts; label: string; color: string }[] = [
  { key: 'enqueued', label: 'Enqueued', color: '#0b57d0' },
  { key: 'delivered', label: 'Delivered', color: '#0f6b2f' },
  { key: 'failed', label: 'Failed attempts', color: '#b45309' },
  { key: 'dead_lettered', label: 'Dead-lettered', color: '#a4161a' },
];

export const NOT_AVAILABLE = 'not available from this process';

export const totals = (t: Timeline): Counts => {
  const out: Counts = { enqueued: 0, delivered: 0, failed: 0, dead_lettered: 0 };
  for (const b of t.buckets) for (const s of SERIES) out[s.key] += b[s.key];
  return out;
};

/** Delivered in the last complete minute (the current one is still filling up). */
export const throughputPerMinute = (hour: Timeline): number => hour.buckets.at(-2)?.delivered ?? 0;

const GAUGE_WORDS: [keyof Gauges, string][] = [
  ['in_flight', 'in flight'],
  ['retry_queue', 'retry queue'],
  ['slow_lane', 'slow lane'],
  ['consumer_lag', 'consumer lag'],
  ['open_circuits', 'endpoints with an open circuit'],
];

const cap = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

const counted = (c: Counts) => `${c.enqueued} enqueued, ${c.delivered} delivered, ${c.failed} failed attempts, ${c.dead_lettered} dead-lettered`;

export const summarize = (hour: Timeline, day: Timeline, g: Gauges): string => {
  const known = GAUGE_WORDS.filter(([k]) => g[k] !== null).map(([k, w]) => `${w}: ${g[k]}`);
  const unknown = GAUGE_WORDS.filter(([k]) => g[k] === null).map(([, w]) => w);
  return [
    `Last hour: ${counted(totals(hour))}.`,
    `Last day: ${counted(totals(day))}.`,
    `Throughput now: ${throughputPerMinute(hour)} delivered per minute.`,
    known.length ? `${cap(known.join('; '))}.` : '',
    unknown.length ? `${cap(unknown.join(', '))}: ${NOT_AVAILABLE}.` : '',
  ]
    .filter(Boolean)
    .join(' ');
};
