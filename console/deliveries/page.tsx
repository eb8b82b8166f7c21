import { useEffect, useRef, useState, type Dispatch, type StateUpdater } from 'preact/hooks';
import { time, type PageProps } from '../actions';
import { ErrorAlert } from '../alert';
import { ApiError, apiGet } from '../api';
import { ConfigFilters, type FilterForm } from '../filters';
import { useShortcuts } from '../keys';
import { Pager, useCursors } from '../pager';
import { navigate } from '../router';
import { Details } from './details';
import { useLiveRows, type LiveState } from './live';
import type { ListBody } from '../../core/http/routes/webhooks';
import { STATES, type Row } from './types';

// Deliveries: GET /webhooks of one config, filtered by state, a page at a time. Every value
// from the API is rendered as a text node.

const PAGE_SIZE = 25;
const FILTERS: FilterForm = {
  label: 'Filter deliveries',
  path: '/console/deliveries',
  configFieldId: 'f-config',
  choice: { id: 'f-state', label: 'State', param: 'state', options: STATES },
};

export const Deliveries = ({ apiKey, query, onUnauthorized }: PageProps) => {
  const configId = query.get('config_id') ?? '';
  const state = query.get('state') ?? '';
  const pages = useCursors();
  const [open, setOpen] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  const configInput = useRef<HTMLInputElement>(null);

  useEffect(() => {
    pages.reset();
    setOpen(null);
  }, [configId, state]);
  const { page, setPage, error, loading } = useWebhookPage({ configId, state, cursor: pages.cursor, apiKey, tick, onUnauthorized });
  const { live, seen } = useLiveMerge(configId, state, apiKey, pages.cursor, setPage);

  const next = () => pages.next(page?.next_cursor);
  const refresh = () => setTick((t) => t + 1);
  useShortcuts('Deliveries', [
    { key: '/', label: 'Focus the config filter', run: () => configInput.current?.focus() },
    { key: 'r', label: 'Refresh', run: refresh },
    { key: 'n', label: 'Next page', run: next },
    { key: 'p', label: 'Previous page', run: pages.prev },
  ]);

  return (
    <section aria-labelledby="deliveries-title">
      <h1 id="deliveries-title">Deliveries</h1>
      <ConfigFilters form={FILTERS} configId={configId} choice={state} configInput={configInput} refresh={refresh} />
      <p class="status" role="status">
        {!configId ? 'Enter a config id to list its deliveries (newest first).' : loading ? 'Loading…' : page ? `${page.count} deliveries on this page (page ${pages.page}).` : ''}
      </p>
      {configId && <LiveLine live={live} seen={seen} />}
      <ErrorAlert text={error} />
      {page && page.items.length > 0 && <DeliveryTable page={page} configId={configId} state={state} open={open} setOpen={setOpen} apiKey={apiKey} />}
      {page && page.items.length === 0 && <p>No deliveries match.</p>}
      {configId && <Pager label="Pages of deliveries" cursors={pages} hasNext={!!page?.next_cursor} next={next} />}
    </section>
  );
};

type PageQuery = { configId: string; state: string; cursor: string | null; apiKey: string | null; tick: number; onUnauthorized: () => void };
type PageLoad = { page: ListBody<Row> | null; setPage: Dispatch<StateUpdater<ListBody<Row> | null>>; error: string | null; loading: boolean };

/** The page of GET /webhooks the filter and cursor name, read again when `tick` changes. */
const useWebhookPage = ({ configId, state, cursor, apiKey, tick, onUnauthorized }: PageQuery): PageLoad => {
  const [page, setPage] = useState<ListBody<Row> | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(false);
  useEffect(() => {
    if (!configId) {
      setPage(null);
      return;
    }
    let live = true;
    setLoading(true);
    const q = new URLSearchParams({ config_id: configId, limit: String(PAGE_SIZE) });
    if (state) q.set('state', state);
    if (cursor) q.set('cursor', cursor);
    apiGet<ListBody<Row>>(`/webhooks?${q}`, apiKey)
      .then((p) => live && (setPage(p), setError(null)))
      .catch((e: ApiError) => {
        if (!live) return;
        if (e.status === 401) onUnauthorized();
        setPage(null);
        setError(e.message + (e.field ? ` (${e.field})` : ''));
      })
      .finally(() => live && setLoading(false));
    return () => void (live = false);
  }, [configId, state, cursor, apiKey, tick]);
  return { page, setPage, error, loading };
};

type Seen = { added: number; changed: number };

/** Live updates: a changed row is replaced where it is; a new one goes on top of the first page. */
const useLiveMerge = (configId: string, state: string, apiKey: string | null, cursor: string | null, setPage: PageLoad['setPage']): { live: LiveState; seen: Seen } => {
  const [seen, setSeen] = useState<Seen>({ added: 0, changed: 0 });
  useEffect(() => setSeen({ added: 0, changed: 0 }), [configId, state]);
  const live = useLiveRows(configId, state, apiKey, (r) =>
    setPage((p) => {
      if (!p) return p;
      const i = p.items.findIndex((x) => x.webhook_id === r.webhook_id);
      if (i >= 0) {
        setSeen((n) => ({ ...n, changed: n.changed + 1 }));
        return { ...p, items: p.items.map((x, j) => (j === i ? r : x)) };
      }
      if (cursorRef.current !== null) return p;
      setSeen((n) => ({ ...n, added: n.added + 1 }));
      return { ...p, items: [r, ...p.items], count: p.count + 1 };
    }),
  );
  // Read when a row arrives, not when the callback was made: only the first page takes new rows.
  const cursorRef = useRef(cursor);
  cursorRef.current = cursor;
  return { live, seen };
};

const LiveLine = ({ live, seen }: { live: LiveState; seen: Seen }) => (
  <p class={`live live-${live}`} data-testid="live" aria-live="polite">
    {live === 'live'
      ? 'Live: new deliveries and state changes appear as they happen.'
      : live === 'connecting'
        ? 'Connecting to live updates…'
        : 'Live updates are off; reconnecting.'}
    {seen.added + seen.changed > 0 && ` Since loaded: ${seen.added} new, ${seen.changed} changed.`}
  </p>
);

type TableProps = { page: ListBody<Row>; configId: string; state: string; open: string | null; setOpen: (id: string | null) => void; apiKey: string | null };

const DeliveryTable = ({ page, configId, state, open, setOpen, apiKey }: TableProps) => (
  <table class="deliveries">
    <caption>
      Deliveries of config {configId}
      {state ? `, state ${state}` : ''}
    </caption>
    <thead>
      <tr>
        <th scope="col">Webhook</th>
        <th scope="col">State</th>
        <th scope="col">Attempts</th>
        <th scope="col">Endpoint</th>
        <th scope="col">Last result</th>
        <th scope="col">Created</th>
        <th scope="col">Next retry</th>
      </tr>
    </thead>
    <tbody>{page.items.map((r) => deliveryRows(r, open, setOpen, apiKey))}</tbody>
  </table>
);

/** A row's line, and its details under it while it is the open one (a keyed pair, not a component). */
const deliveryRows = (r: Row, open: string | null, setOpen: (id: string | null) => void, apiKey: string | null) => [
  <tr key={r.webhook_id}>
    <td>
      <a
        class="inspect"
        href={`/console/webhooks/${encodeURIComponent(r.webhook_id)}`}
        onClick={(e) => (e.preventDefault(), navigate(`/console/webhooks/${encodeURIComponent(r.webhook_id)}`))}
        aria-label={`Inspect ${r.webhook_id}`}
      >
        Inspect
      </a>{' '}
      <button
        type="button"
        class="link"
        aria-expanded={open === r.webhook_id}
        aria-controls={`d-${r.webhook_id}`}
        onClick={() => setOpen(open === r.webhook_id ? null : r.webhook_id)}
      >
        {r.webhook_id}
      </button>
    </td>
    <td>
      <span class={`state state-${r.state}`}>{r.state}</span>
      {r.held ? ` (held: ${r.held})` : ''}
    </td>
    <td>
      {r.attempts} / {r.max_attempts}
    </td>
    <td class="endpoint">{r.endpoint}</td>
    <td>{r.last_status_code ?? r.last_error ?? '—'}</td>
    <td>{time(r.created_at)}</td>
    <td>{time(r.next_retry_at)}</td>
  </tr>,
  open === r.webhook_id && (
    <tr key={`${r.webhook_id}-details`} id={`d-${r.webhook_id}`}>
      <td colSpan={7}>
        <Details row={r} apiKey={apiKey} />
      </td>
    </tr>
  ),
];
