import { useEffect, useState } from 'preact/hooks';
import { ErrorAlert } from '../alert';
import { ApiError, apiGet } from '../api';
import { useShortcuts } from '../keys';
import { Chart } from './chart';
import { NOT_AVAILABLE, summarize, throughputPerMinute, totals, SERIES, type Gauges, type Timeline } from './summary';
import './overview.css';

// The Overview: GET /stats/timeline (1h, 24h) as charts, GET /stats/gauges as tiles, and the
// same numbers in words in an aria-live region. Refreshed every 10 s.

const REFRESH_MS = 10_000;

type Data = { hour: Timeline; day: Timeline; gauges: Gauges };

const Tile = ({ label, value, unit }: { label: string; value: number | null; unit?: string }) => (
  <div class="tile">
    <dt>{label}</dt>
    <dd class={value === null ? 'na' : ''}>
      {value === null ? NOT_AVAILABLE : value}
      {value !== null && unit && <span class="unit"> {unit}</span>}
    </dd>
  </div>
);

export const Overview = ({ apiKey, onUnauthorized }: { apiKey: string | null; onUnauthorized: () => void }) => {
  const [d, setD] = useState<Data | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    Promise.all([apiGet<Timeline>('/stats/timeline?window=1h', apiKey), apiGet<Timeline>('/stats/timeline?window=24h', apiKey), apiGet<Gauges>('/stats/gauges', apiKey)]).then(
      ([hour, day, gauges]) => live && (setD({ hour, day, gauges }), setError(null)),
      (e: ApiError) => {
        if (!live) return;
        if (e.status === 401) onUnauthorized();
        setError(e.message);
      },
    );
    const t = setTimeout(() => setTick((n) => n + 1), REFRESH_MS);
    return () => {
      live = false;
      clearTimeout(t);
    };
  }, [apiKey, tick]);
  useShortcuts('Overview', [{ key: 'r', label: 'Refresh', run: () => setTick((n) => n + 1) }]);

  return (
    <section aria-labelledby="overview-title" class="overview">
      <h1 id="overview-title">Overview</h1>
      <ErrorAlert text={error} />
      <p class="summary" aria-live="polite" data-testid="summary">
        {d ? summarize(d.hour, d.day, d.gauges) : 'Loading…'}
      </p>
      {d && (
        <>
          <dl class="tiles">
            <Tile label="Throughput now" value={throughputPerMinute(d.hour)} unit="delivered/min" />
            <Tile label="In flight" value={d.gauges.in_flight} />
            <Tile label="Retry queue" value={d.gauges.retry_queue} />
            <Tile label="Slow lane" value={d.gauges.slow_lane} />
            <Tile label="Consumer lag" value={d.gauges.consumer_lag} />
            <Tile label="Open circuits" value={d.gauges.open_circuits} />
          </dl>
          <div class="charts">
            {[
              { t: d.hour, title: 'Last hour, per minute (UTC)', name: 'Last hour' },
              { t: d.day, title: 'Last day, per 15 minutes (UTC)', name: 'Last day' },
            ].map(({ t, title, name }) => {
              const sum = totals(t);
              return (
                <figure key={title}>
                  <Chart timeline={t} title={title} />
                  <figcaption>
                    {name}: {SERIES.map((s) => `${sum[s.key]} ${s.label.toLowerCase()}`).join(', ')}
                  </figcaption>
                </figure>
              );
            })}
          </div>
        </>
      )}
    </section>
  );
};
