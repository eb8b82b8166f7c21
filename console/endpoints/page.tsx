import { useEffect, useRef, useState } from 'preact/hooks';
import { ErrorAlert } from '../alert';
import { apiSend, errorText, time, useApiResource, useRights, type PageProps } from '../actions';
import { useShortcuts } from '../keys';
import { navigate } from '../router';
import { Applications, RegisteredEndpoints } from './registered';

// Endpoints: GET /endpoints?config_id=… (the endpoints among the config's newest webhooks,
// each with its live guard state), pause / resume / reset circuit per endpoint, and pause /
// resume of the whole config. A key without the admin scope sees the buttons disabled. Above
// them, the endpoints registered through the Svix API when the config is an application.

type Endpoint = {
  endpoint: string;
  endpoint_hash: string;
  webhooks: number;
  last_created_at: string;
  circuit: { state: 'CLOSED' | 'OPEN' | 'HALF_OPEN'; failures: number; open_until: number | null };
  paused: boolean;
  draining: boolean;
  parked_while_paused: number;
  last_errors: { at: string; error: string }[];
  concurrency: {
    limit: number;
    latency_ms: { p50: number | null; p90: number | null; samples: number };
    inflight: number;
    queued: number;
    slow: boolean;
    slow_reason: 'latency' | 'timeouts' | null;
  };
};
type List = { items: Endpoint[]; count: number; scanned: number; complete: boolean };

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
const ms = (v: number | null) => (v === null ? '—' : `${Math.round(v)} ms`);

export const Endpoints = ({ apiKey, query, onUnauthorized }: PageProps) => {
  const configId = query.get('config_id') ?? '';
  const [draft, setDraft] = useState(configId);
  const [notice, setNotice] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  const input = useRef<HTMLInputElement>(null);
  const rights = useRights(apiKey);
  const refresh = () => setTick((t) => t + 1);

  useEffect(() => setDraft(configId), [configId]);
  const { data: list, error } = useApiResource<List>(configId ? `/endpoints?config_id=${encodeURIComponent(configId)}` : null, apiKey, tick, onUnauthorized);

  const act = (label: string, path: string) =>
    apiSend<unknown>('POST', path, apiKey).then(
      () => (setNotice(`${label}: done.`), refresh()),
      (e) => setNotice(`${label} refused: ${errorText(e)}`),
    );
  const cfg = encodeURIComponent(configId);
  useShortcuts('Endpoints', [
    { key: '/', label: 'Focus the config filter', run: () => input.current?.focus() },
    { key: 'r', label: 'Refresh', run: refresh },
    { key: 'P', label: 'Pause the whole config', run: () => rights.act && configId && act(`Pause of config ${configId}`, `/configs/${cfg}/pause`) },
    { key: 'U', label: 'Resume the whole config', run: () => rights.act && configId && act(`Resume of config ${configId}`, `/configs/${cfg}/resume`) },
  ]);

  return (
    <section aria-labelledby="ep-title">
      <h1 id="ep-title">Endpoints</h1>
      <form
        class="filters"
        role="search"
        aria-label="Choose a config"
        onSubmit={(e) => {
          e.preventDefault();
          navigate(`/console/endpoints${draft.trim() ? `?config_id=${encodeURIComponent(draft.trim())}` : ''}`);
        }}
      >
        <label for="ep-config">Config id</label>
        <input id="ep-config" ref={input} required value={draft} placeholder="tenant123" aria-keyshortcuts="/" onInput={(e) => setDraft(e.currentTarget.value)} />
        <button type="submit">Show</button>
        <button type="button" disabled={!configId} onClick={refresh} aria-keyshortcuts="r">
          Refresh
        </button>
      </form>
      {configId && (
        <div class="row config-actions">
          <span>Config {configId}:</span>
          <button type="button" disabled={!rights.act} onClick={() => act(`Pause of config ${configId}`, `/configs/${cfg}/pause`)} aria-keyshortcuts="P">
            Pause config
          </button>
          <button type="button" disabled={!rights.act} onClick={() => act(`Resume of config ${configId}`, `/configs/${cfg}/resume`)} aria-keyshortcuts="U">
            Resume config
          </button>
        </div>
      )}
      {!rights.act && rights.known && rights.why && <p class="why">{rights.why}</p>}
      <p class="status" role="status">
        {!configId
          ? 'Enter a config id to see the endpoints it delivers to.'
          : list
            ? `${plural(list.count, 'endpoint')} among the config's ${plural(list.scanned, 'newest webhook')}${list.complete ? '' : ' (older ones not looked at)'}.`
            : ''}
        {notice ? ` ${notice}` : ''}
      </p>
      <ErrorAlert text={error} />
      {!configId && <Applications apiKey={apiKey} />}
      {configId && (
        <RegisteredEndpoints configId={configId} apiKey={apiKey} tick={tick} traffic={list?.items ?? []} focus={query.get('endpoint')} onUnauthorized={onUnauthorized} />
      )}
      {list && list.items.length > 0 && <h2>Seen in traffic</h2>}
      {list && list.items.length > 0 && (
        <div class="cards ep-cards">
          {list.items.map((e) => (
            <EndpointCard key={e.endpoint_hash} e={e} canAct={rights.act} why={rights.why} act={act} />
          ))}
        </div>
      )}
      {list && list.items.length === 0 && <p>No webhooks of this config in the hot state.</p>}
    </section>
  );
};

const circuitClass = (s: string) => (s === 'OPEN' ? 'circuit-open' : s === 'HALF_OPEN' ? 'circuit-half_open' : 'ok');

type CardProps = { e: Endpoint; canAct: boolean; why: string | null; act: (label: string, path: string) => void };

const EndpointCard = ({ e, canAct, why, act }: CardProps) => {
  const c = e.concurrency;
  const base = `/endpoints/${e.endpoint_hash}`;
  const title = canAct ? undefined : (why ?? undefined);
  return (
    <article class="card" aria-label={`Endpoint ${e.endpoint}`} data-testid={`ep-${e.endpoint_hash}`}>
      <h2 class="url">{e.endpoint}</h2>
      <dl class="facts">
        <div>
          <dt>Circuit</dt>
          <dd class={circuitClass(e.circuit.state)}>
            {e.circuit.state}
            {e.circuit.failures ? ` (${e.circuit.failures} failures)` : ''}
          </dd>
        </div>
        <div>
          <dt>Paused</dt>
          <dd data-testid="paused" class={e.paused ? 'bad' : undefined}>
            {e.paused ? `yes${e.parked_while_paused ? `, ${e.parked_while_paused} held` : ''}` : e.draining ? 'draining' : 'no'}
          </dd>
        </div>
        <div>
          <dt>Latency p50 / p90</dt>
          <dd>
            {ms(c.latency_ms.p50)} / {ms(c.latency_ms.p90)} ({plural(c.latency_ms.samples, 'sample')})
          </dd>
        </div>
        <div>
          <dt>Adaptive limit</dt>
          <dd>{c.limit}</dd>
        </div>
        <div>
          <dt>In flight / queued</dt>
          <dd>
            {c.inflight} / {c.queued}
          </dd>
        </div>
        <div>
          <dt>Slow</dt>
          <dd>{c.slow ? `yes (${c.slow_reason === 'timeouts' ? 'timeouts' : 'latency'})` : 'no'}</dd>
        </div>
        <div>
          <dt>Webhooks seen</dt>
          <dd>
            {e.webhooks}, newest {time(e.last_created_at)}
          </dd>
        </div>
        <div>
          <dt>Hash</dt>
          <dd class="mono">{e.endpoint_hash}</dd>
        </div>
      </dl>
      {e.last_errors.length > 0 && (
        <>
          <h3>Last errors</h3>
          <ul class="errors">
            {e.last_errors.slice(0, 3).map((x) => (
              <li key={x.at + x.error}>
                {time(x.at)}: {x.error}
              </li>
            ))}
          </ul>
        </>
      )}
      <div class="row">
        {e.paused ? (
          <button type="button" disabled={!canAct} title={title} onClick={() => act(`Resume of ${e.endpoint}`, `${base}/resume`)}>
            Resume
          </button>
        ) : (
          <button type="button" disabled={!canAct} title={title} onClick={() => act(`Pause of ${e.endpoint}`, `${base}/pause`)}>
            Pause
          </button>
        )}
        <button type="button" disabled={!canAct} title={title} onClick={() => act(`Circuit reset of ${e.endpoint}`, `${base}/circuit/reset`)}>
          Reset circuit
        </button>
      </div>
    </article>
  );
};
