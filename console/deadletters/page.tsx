import { useEffect, useRef, useState } from 'preact/hooks';
import { ErrorAlert } from '../alert';
import { apiGet } from '../api';
import { apiSend, errorText, time, useApiResource, useRights, type PageProps } from '../actions';
import { ConfigFilters, type FilterForm } from '../filters';
import { useShortcuts } from '../keys';
import { Pager, useCursors } from '../pager';
import { BulkPanel, useBulk } from './bulk';
import type { ListBody } from '../../core/http/routes/webhooks';
import { REASONS, type DeadLetterRow, type Job } from './types';

// Dead letters: GET /deadletter of one config (by reason, a page at a time), replay one
// (POST /deadletter/:id/replay) or many (bulk.tsx). Each dead letter shows the webhooks
// replayed from it, and a dead letter that was itself a replay shows its original.

const PAGE_SIZE = 25;
const FILTERS: FilterForm = {
  label: 'Filter dead letters',
  path: '/console/deadletters',
  configFieldId: 'dl-config',
  choice: { id: 'dl-reason', label: 'Reason', param: 'reason_type', options: REASONS },
};
/** Webhooks of the config looked at for replays of the dead letters shown (GET /webhooks, newest first). */
const REPLAY_SCAN = 500;

/** original id → its replays' ids, from the config's newest webhooks. */
const useReplays = (apiKey: string | null, configId: string, tick: number) => {
  const [map, setMap] = useState<Map<string, string[]>>(new Map());
  useEffect(() => {
    if (!configId) return;
    let live = true;
    apiGet<ListBody<{ webhook_id: string; replay_of?: string }>>(`/webhooks?config_id=${encodeURIComponent(configId)}&limit=${REPLAY_SCAN}`, apiKey).then(
      (p) => {
        if (!live) return;
        const m = new Map<string, string[]>();
        for (const w of p.items) if (w.replay_of) m.set(w.replay_of, [...(m.get(w.replay_of) ?? []), w.webhook_id]);
        setMap(m);
      },
      () => {},
    );
    return () => void (live = false);
  }, [configId, apiKey, tick]);
  return map;
};

/** One page of GET /deadletter. */
const useDeadPage = (apiKey: string | null, configId: string, reasonType: string, cursor: string | null, tick: number, onUnauthorized: () => void) => {
  const q = new URLSearchParams({ config_id: configId, limit: String(PAGE_SIZE) });
  if (reasonType) q.set('reason_type', reasonType);
  if (cursor) q.set('cursor', cursor);
  const { data: page, error } = useApiResource<ListBody<DeadLetterRow>>(configId ? `/deadletter?${q}` : null, apiKey, tick, onUnauthorized);
  return { page, error };
};

export const DeadLetters = ({ apiKey, query, onUnauthorized }: PageProps) => {
  const configId = query.get('config_id') ?? '';
  const reasonType = query.get('reason_type') ?? '';
  const pages = useCursors();
  const [notice, setNotice] = useState<string | null>(null);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [tick, setTick] = useState(0);
  const configInput = useRef<HTMLInputElement>(null);
  const rights = useRights(apiKey);
  const replays = useReplays(apiKey, configId, tick);
  const refresh = () => setTick((t) => t + 1);
  const bulk = useBulk({
    apiKey,
    configId,
    reasonType,
    selected: [...selected],
    rights,
    jobId: query.get('job'),
    onEnd: (j: Job) => (setNotice(`Bulk replay ${j.state}: ${j.replayed} replayed.`), refresh()),
  });

  useEffect(() => {
    pages.reset();
    setSelected(new Set());
  }, [configId, reasonType]);

  const { page, error } = useDeadPage(apiKey, configId, reasonType, pages.cursor, tick, onUnauthorized);

  const replayOne = (id: string) =>
    apiSend<{ webhook_id: string }>('POST', `/deadletter/${encodeURIComponent(id)}/replay`, apiKey).then(
      (r) => (setNotice(`Replayed ${id} as ${r.webhook_id}.`), refresh()),
      (e) => setNotice(`Replay of ${id} refused: ${errorText(e)}`),
    );
  const next = () => pages.next(page?.next_cursor);
  const toggle = (id: string) => {
    const s = new Set(selected);
    if (s.has(id)) s.delete(id);
    else s.add(id);
    setSelected(s);
  };
  useShortcuts('Dead letters', [
    { key: '/', label: 'Focus the config filter', run: () => configInput.current?.focus() },
    { key: 'r', label: 'Refresh', run: refresh },
    { key: 'n', label: 'Next page', run: next },
    { key: 'p', label: 'Previous page', run: pages.prev },
    { key: 'm', label: 'Replay the ticked dead letters', run: () => rights.act && selected.size > 0 && bulk.start('selected') },
    { key: 'a', label: 'Replay every dead letter the filter matches', run: () => rights.act && configId && bulk.start('all') },
    { key: 'q', label: 'Stop the bulk replay', run: bulk.stop },
  ]);

  return (
    <section aria-labelledby="dl-title">
      <h1 id="dl-title">Dead letters</h1>
      <ConfigFilters form={FILTERS} configId={configId} choice={reasonType} configInput={configInput} refresh={refresh} />
      <p class="status" role="status">
        {!configId ? 'Enter a config id to list its dead letters (oldest first).' : page ? `${page.count} dead letters on this page (page ${pages.page}).` : ''}
        {notice ? ` ${notice}` : ''}
      </p>
      <ErrorAlert text={error} />
      {configId && <BulkPanel bulk={bulk} rights={rights} selected={[...selected]} configId={configId} reasonType={reasonType} />}
      {page && page.items.length > 0 && (
        <DeadTable rows={page.items} selected={selected} toggle={toggle} replays={replays} canAct={rights.act} why={rights.why} onReplay={replayOne} />
      )}
      {page && page.items.length === 0 && <p>No dead letters match.</p>}
      {configId && <Pager label="Pages of dead letters" cursors={pages} hasNext={!!page?.next_cursor} next={next} />}
    </section>
  );
};

type TableProps = {
  rows: DeadLetterRow[];
  selected: Set<string>;
  toggle: (id: string) => void;
  replays: Map<string, string[]>;
  canAct: boolean;
  why: string | null;
  onReplay: (id: string) => void;
};

const DeadTable = ({ rows, selected, toggle, replays, canAct, why, onReplay }: TableProps) => (
  <table class="deliveries deadletters">
    <caption>Dead letters, oldest first</caption>
    <thead>
      <tr>
        <th scope="col">
          <span class="visually-hidden">Selected</span>
        </th>
        <th scope="col">Webhook</th>
        <th scope="col">Reason</th>
        <th scope="col">Last result</th>
        <th scope="col">Endpoint</th>
        <th scope="col">Dead at</th>
        <th scope="col">Replays</th>
        <th scope="col">Action</th>
      </tr>
    </thead>
    <tbody>
      {rows.map((r) => (
        <tr key={r.webhook_id} data-testid={`dl-${r.webhook_id}`}>
          <td>
            <input type="checkbox" aria-label={`Select ${r.webhook_id}`} checked={selected.has(r.webhook_id)} onChange={() => toggle(r.webhook_id)} />
          </td>
          <td class="mono">
            {r.webhook_id}
            {r.webhook.replay_of && <div class="muted">replay of {r.webhook.replay_of}</div>}
          </td>
          <td>
            <span class="state state-failed">{r.reason_type}</span>
            <div class="muted">{r.reason}</div>
          </td>
          <td>{r.last_status_code ?? r.last_error ?? '—'}</td>
          <td class="endpoint">{r.webhook.endpoint ?? '—'}</td>
          <td>{time(r.dead_at)}</td>
          <td class="mono" data-testid="replays">
            {(replays.get(r.webhook_id) ?? []).map((id) => (
              <div key={id}>→ {id}</div>
            ))}
          </td>
          <td>
            <button type="button" disabled={!canAct} title={canAct ? undefined : (why ?? undefined)} aria-label={`Replay ${r.webhook_id}`} onClick={() => onReplay(r.webhook_id)}>
              Replay
            </button>
          </td>
        </tr>
      ))}
    </tbody>
  </table>
);
