import { useEffect, useState } from 'preact/hooks';
import type { ListBody } from '../../core/http/routes/webhooks';
import { apiGet } from '../api';
import { errorText, time, useApiResource, useRights, type PageProps, type Rights } from '../actions';
import { ErrorAlert } from '../alert';
import { useShortcuts } from '../keys';
import { Pager, useCursors } from '../pager';
import { navigate } from '../router';
import { DryRun } from './dry-run';
import { Transformers } from './transformers';

// Scripts: every config's delivery script (GET /scripts), one opened with its source
// (GET /config/:config/script) and a dry run against a sample payload (dry-run.tsx).

type Row = { config_id: string; sha256: string; bytes: number; lines: number; apply_to_children: boolean; updated_at: string };
type Script = { config_id: string; script: string; sha256: string; apply_to_children: boolean; updated_at: string };

export const Scripts = ({ apiKey, query, onUnauthorized }: PageProps) => {
  const open = query.get('config_id') ?? '';
  const pages = useCursors();
  const [script, setScript] = useState<Script | null>(null);
  const [scriptError, setScriptError] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  const rights = useRights(apiKey);
  const cursor = pages.cursor;

  const { data: list, error } = useApiResource<ListBody<Row>>(`/scripts?limit=50${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, apiKey, tick, onUnauthorized);

  useEffect(() => {
    setScript(null);
    setScriptError(null);
    if (!open) return;
    let live = true;
    apiGet<Script>(`/config/${encodeURIComponent(open)}/script`, apiKey).then(
      (s) => live && setScript(s),
      (e) => live && setScriptError(errorText(e)),
    );
    return () => void (live = false);
  }, [open, apiKey]);

  const next = () => pages.next(list?.next_cursor);
  useShortcuts('Scripts', [
    { key: 'r', label: 'Refresh', run: () => setTick((t) => t + 1) },
    { key: 'n', label: 'Next page', run: next },
    { key: 'p', label: 'Previous page', run: pages.prev },
  ]);

  return (
    <section aria-labelledby="sc-title">
      <h1 id="sc-title">Scripts</h1>
      <p class="intro">
        Delivery scripts (Lua) run before each delivery of their config, and of the configs under it when they apply to children. Open one to read it and try it on a sample
        payload: a dry run sends nothing.
      </p>
      <ErrorAlert text={error} />
      <div class="split">
        <div>
          {list && <ScriptList list={list} open={open} page={pages.page} />}
          <Pager label="Pages of scripts" cursors={pages} hasNext={!!list?.next_cursor} next={next} />
        </div>
        <div>
          {!open && <p class="status">Pick a config to read its script.</p>}
          <ErrorAlert text={scriptError} />
          {script && <ScriptView script={script} apiKey={apiKey} rights={rights} />}
        </div>
      </div>
      <Transformers apiKey={apiKey} />
    </section>
  );
};

const ScriptView = ({ script, apiKey, rights }: { script: Script; apiKey: string | null; rights: Rights }) => (
  <article class="panel" aria-labelledby="sc-source">
    <h2 id="sc-source">Script of {script.config_id}</h2>
    <p class="muted">
      SHA-256 <code>{script.sha256.slice(0, 16)}…</code>, updated {time(script.updated_at)}
      {script.apply_to_children ? ', applies to the configs under it' : ''}
    </p>
    <pre data-testid="script-source" class="source">
      {script.script}
    </pre>
    <DryRun key={script.config_id} apiKey={apiKey} configId={script.config_id} source={script.script} rights={rights} />
  </article>
);

const ScriptList = ({ list, open, page }: { list: ListBody<Row>; open: string; page: number }) => (
  <table class="deliveries">
    <caption>{list.count === 0 ? 'No config has a script.' : `${list.count} script${list.count === 1 ? '' : 's'} (page ${page})`}</caption>
    <thead>
      <tr>
        <th scope="col">Config</th>
        <th scope="col">Size</th>
        <th scope="col">Children</th>
        <th scope="col">Updated</th>
      </tr>
    </thead>
    <tbody>
      {list.items.map((r) => (
        <tr key={r.config_id} aria-current={r.config_id === open ? 'true' : undefined}>
          <td>
            <a
              href={`/console/scripts?config_id=${encodeURIComponent(r.config_id)}`}
              onClick={(e) => (e.preventDefault(), navigate(`/console/scripts?config_id=${encodeURIComponent(r.config_id)}`))}
            >
              {r.config_id}
            </a>
          </td>
          <td>
            {r.lines} lines, {r.bytes} B
          </td>
          <td>{r.apply_to_children ? 'yes' : 'no'}</td>
          <td>{time(r.updated_at)}</td>
        </tr>
      ))}
    </tbody>
  </table>
);
