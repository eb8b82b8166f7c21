import { useEffect, useState } from 'preact/hooks';
import type { SvixList } from '../../core/http/routes/svix-common';
import { ApiError, apiGet } from '../api';
import { navigate } from '../router';
import './registered.css';

// The registered model beside the traffic: the endpoints of a Svix application (GET
// /api/v1/app/:app/endpoint; an application is the config of the same id) with their filters and
// policy, joined by URL to the live guard state the traffic list reads. Every value is a text node.

export type Registered = {
  id: string;
  uid: string | null;
  url: string;
  description: string;
  disabled: boolean;
  filterTypes: string[] | null;
  channels: string[] | null;
  throttleRate: number | null;
  maxAttempts: number | null;
};
/** What the traffic list knows of one URL (console/endpoints/page.tsx). */
export type Health = {
  endpoint: string;
  circuit: { state: string; failures: number };
  concurrency: { inflight: number; queued: number };
  webhooks: number;
  last_errors: unknown[];
};
type App = { id: string; uid: string | null; name: string };

const list = (v: string[] | null, all: string) => (v && v.length ? v.join(', ') : all);

/** The applications the key reads, as links to their endpoints (shown before a config is chosen). */
export const Applications = ({ apiKey }: { apiKey: string | null }) => {
  const [apps, setApps] = useState<App[] | null>(null);
  useEffect(() => {
    let live = true;
    apiGet<SvixList<App>>('/api/v1/app?limit=250', apiKey).then(
      (p) => live && setApps(p.data),
      () => live && setApps(null),
    );
    return () => void (live = false);
  }, [apiKey]);
  if (!apps || apps.length === 0) return null;
  return (
    <nav aria-label="Applications">
      <h2>Applications</h2>
      <ul class="apps">
        {apps.map((a) => (
          <li key={a.id}>
            <a
              href={`/console/endpoints?config_id=${encodeURIComponent(a.id)}`}
              onClick={(e) => (e.preventDefault(), navigate(`/console/endpoints?config_id=${encodeURIComponent(a.id)}`))}
            >
              {a.name}
            </a>{' '}
            <span class="mono">{a.uid ?? a.id}</span>
          </li>
        ))}
      </ul>
    </nav>
  );
};

type Props = { configId: string; apiKey: string | null; tick: number; traffic: Health[]; focus: string | null; onUnauthorized: () => void };

export const RegisteredEndpoints = ({ configId, apiKey, tick, traffic, focus, onUnauthorized }: Props) => {
  const [items, setItems] = useState<Registered[] | null>(null);
  const [note, setNote] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    apiGet<SvixList<Registered>>(`/api/v1/app/${encodeURIComponent(configId)}/endpoint?limit=250`, apiKey).then(
      (p) => live && (setItems(p.data), setNote(p.done ? null : 'There are more: the first 250 are shown.')),
      (e: ApiError) => {
        if (!live) return;
        if (e.status === 401) onUnauthorized();
        setItems(null);
        // A config made by enqueues alone is no application: nothing is registered, nothing is wrong.
        setNote(e.status === 404 ? null : `Registered endpoints did not load: ${e.message}`);
      },
    );
    return () => void (live = false);
  }, [configId, apiKey, tick]);
  useEffect(() => {
    if (focus && items) document.getElementById(`reg-${focus}`)?.scrollIntoView();
  }, [focus, items]);
  if (!items && !note) return null;
  const byUrl = new Map(traffic.map((t) => [t.endpoint, t]));
  return (
    <section aria-labelledby="reg-title">
      <h2 id="reg-title">Registered endpoints</h2>
      <p class="status" data-testid="reg-status">
        {items ? `${items.length} registered in application ${configId}.` : ''} {note}
      </p>
      {items && items.length > 0 && (
        <div class="cards ep-cards">
          {items.map((e) => (
            <Card key={e.id} e={e} health={byUrl.get(e.url)} focused={focus === e.id || (e.uid !== null && focus === e.uid)} />
          ))}
        </div>
      )}
    </section>
  );
};

const Card = ({ e, health, focused }: { e: Registered; health: Health | undefined; focused: boolean }) => (
  <article
    id={`reg-${e.id}`}
    class={`card${focused ? ' focused' : ''}`}
    aria-label={`Registered endpoint ${e.uid ?? e.id}`}
    data-testid={`reg-${e.id}`}
    aria-current={focused ? 'true' : undefined}
  >
    <h3 class="url">{e.url}</h3>
    {e.description && <p class="desc">{e.description}</p>}
    <dl class="facts">
      <div>
        <dt>Id / uid</dt>
        <dd class="mono">
          {e.id} / {e.uid ?? '—'}
        </dd>
      </div>
      <div>
        <dt>State</dt>
        <dd data-testid="disabled" class={e.disabled ? 'bad' : 'ok'}>
          {e.disabled ? 'disabled' : 'enabled'}
        </dd>
      </div>
      <div>
        <dt>Event types</dt>
        <dd data-testid="filter">{list(e.filterTypes, 'all')}</dd>
      </div>
      <div>
        <dt>Channels</dt>
        <dd>{list(e.channels, 'any')}</dd>
      </div>
      <div>
        <dt>Max attempts</dt>
        <dd data-testid="max-attempts">{e.maxAttempts ?? 'server default'}</dd>
      </div>
      <div>
        <dt>Throttle</dt>
        <dd data-testid="throttle">{e.throttleRate === null ? 'none' : `${e.throttleRate}/s`}</dd>
      </div>
      <div>
        <dt>Health</dt>
        <dd data-testid="health">
          {health
            ? `circuit ${health.circuit.state}${health.circuit.failures ? ` (${health.circuit.failures} failures)` : ''}; ${health.webhooks} recent webhooks, ${health.last_errors.length} recent errors; ${health.concurrency.inflight} in flight, ${health.concurrency.queued} queued`
            : 'no recent traffic'}
        </dd>
      </div>
    </dl>
  </article>
);
