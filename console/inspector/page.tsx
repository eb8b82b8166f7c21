import { useEffect, useState } from 'preact/hooks';
import { ApiError, apiGet } from '../api';
import type { DeadLetter, Status } from '../deliveries/types';
import { useShortcuts } from '../keys';
import { navigate } from '../router';
import { apiPostJson } from './post';
import { clock, describeHistory, span, type HistoryEntry, type RetryNumbers } from './sentences';
import './inspector.css';

// The Inspector: one webhook's story (GET /webhooks/:id/status), its request and last
// response, retry now and replay as a new webhook. Every value is a text node.

type FullStatus = Status & { history: HistoryEntry[] };
type FullDeadLetter = DeadLetter & { last_status_code?: number | null; webhook?: { payload?: unknown; headers?: Record<string, string>; endpoint?: string } };
type Props = { id: string; apiKey: string | null; retry: RetryNumbers | null; onUnauthorized: () => void };

const DEAD = new Set(['failed', 'exhausted']);
// The headers every delivery carries besides the webhook's own (docs/SIGNING.md).
const SIGNED = ['webhook-id', 'webhook-timestamp', 'webhook-signature'];

const payloadText = (p: unknown): string => (typeof p === 'string' ? p : JSON.stringify(p ?? null, null, 2));

export const Inspector = ({ id, apiKey, retry, onUnauthorized }: Props) => {
  const [status, setStatus] = useState<FullStatus | null>(null);
  const [dead, setDead] = useState<FullDeadLetter | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [said, setSaid] = useState<{ text: string; next?: string } | null>(null);
  const [tick, setTick] = useState(0);
  const path = encodeURIComponent(id);

  useEffect(() => {
    let live = true;
    apiGet<FullStatus>(`/webhooks/${path}/status`, apiKey).then(
      (s) => {
        if (!live) return;
        setStatus(s);
        setError(null);
        if (DEAD.has(s.state)) apiGet<FullDeadLetter>(`/deadletter/${path}`, apiKey).then((d) => live && setDead(d), () => live && setDead(null));
      },
      (e: ApiError) => {
        if (!live) return;
        if (e.status === 401) onUnauthorized();
        setError(e.status === 404 ? `There is no webhook ${id} (or it has expired from the hot state).` : e.message);
      },
    );
    return () => void (live = false);
  }, [path, apiKey, tick]);

  const act = async (what: 'retry' | 'replay') => {
    setSaid(null);
    try {
      const url = what === 'retry' ? `/webhooks/${path}/retry` : `/deadletter/${path}/replay`;
      const r = await apiPostJson<{ webhook_id: string }>(url, apiKey);
      if (what === 'retry') {
        setSaid({ text: `Retry accepted: ${r.webhook_id} is on its way again.` });
        setTick((t) => t + 1);
      } else setSaid({ text: `Replayed as a new webhook ${r.webhook_id}.`, next: r.webhook_id });
    } catch (e) {
      const err = e as ApiError;
      if (err.status === 401) onUnauthorized();
      setSaid({ text: err.status === 403 ? 'This key may not do that: retry and replay need the admin scope.' : `Refused: ${err.message}` });
    }
  };

  useShortcuts('Inspector', [
    { key: 'r', label: 'Reload this webhook', run: () => setTick((t) => t + 1) },
    { key: 'b', label: 'Back to Deliveries', run: () => navigate(`/console/deliveries${status ? `?config_id=${encodeURIComponent(status.config_id)}` : ''}`) },
  ]);

  if (error) return <p role="alert">{error}</p>;
  if (!status) return <p>Loading…</p>;
  const sentences = retry ? describeHistory(status.history, retry, status.max_attempts) : [];
  const last = [...status.history].reverse().find((h) => h.outcome !== 'held');
  const ended = DEAD.has(status.state);

  return (
    <section aria-labelledby="inspector-title" class="inspector">
      <h1 id="inspector-title">
        Webhook <code>{status.webhook_id}</code>
      </h1>
      <dl class="facts">
        <dt>State</dt>
        <dd>
          <span class={`state state-${status.state}`}>{status.state}</span>
          {status.held ? ` (held: ${status.held})` : ''}
          {status.dead_reason ? ` (${status.dead_reason})` : ''}
        </dd>
        <dt>Config</dt>
        <dd>{status.config_id}</dd>
        <dt>Endpoint</dt>
        <dd class="endpoint">{status.endpoint}</dd>
        <dt>Attempts</dt>
        <dd>
          {status.attempts} of {status.max_attempts}
        </dd>
        <dt>Created</dt>
        <dd>{status.created_at}</dd>
        <dt>Next try</dt>
        <dd>{status.next_retry_at ?? '—'}</dd>
        {status.replay_of && (
          <>
            <dt>Replay of</dt>
            <dd>
              <a href={`/console/webhooks/${encodeURIComponent(status.replay_of)}`} onClick={(e) => (e.preventDefault(), navigate(`/console/webhooks/${encodeURIComponent(status.replay_of!)}`))}>
                {status.replay_of}
              </a>
            </dd>
          </>
        )}
      </dl>

      <h2>What happened (times in UTC)</h2>
      {status.history.length === 0 ? (
        <p>No attempt yet: it is waiting for its first delivery.</p>
      ) : (
        <ol class="story" data-testid="story">
          {sentences.map((s, i) => (
            <li key={i}>{s}</li>
          ))}
        </ol>
      )}

      <div class="actions" role="group" aria-label="Actions">
        <button type="button" disabled={!ended} onClick={() => void act('retry')} title={ended ? '' : 'Only a webhook at an end (failed or exhausted) can be retried'}>
          Retry now
        </button>
        <button type="button" disabled={!dead} onClick={() => void act('replay')}>
          Replay as a new webhook
        </button>
        {!ended && <span class="hint">Retry and replay apply once the webhook is dead-lettered.</span>}
      </div>
      <p role="status" class="said">
        {said?.text}
        {said?.next && (
          <>
            {' '}
            <a href={`/console/webhooks/${encodeURIComponent(said.next)}`} onClick={(e) => (e.preventDefault(), navigate(`/console/webhooks/${encodeURIComponent(said.next!)}`))}>
              Open it
            </a>
          </>
        )}
      </p>

      <div class="panes">
        <section aria-labelledby="req-title">
          <h2 id="req-title">The request</h2>
          <p>
            <code>POST {status.endpoint}</code>
          </p>
          <h3>Headers</h3>
          <table class="req-headers">
            <caption class="visually-hidden">Headers of the request</caption>
            <tbody>
              {SIGNED.map((h) => (
                <tr key={h}>
                  <th scope="row">{h}</th>
                  <td>{h === 'webhook-id' ? status.webhook_id : 'set at each attempt: the signature covers id, timestamp and body (the secret is never shown)'}</td>
                </tr>
              ))}
              {Object.entries(dead?.webhook?.headers ?? {}).map(([k, v]) => (
                <tr key={k}>
                  <th scope="row">{k}</th>
                  <td>{v}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <h3>Body</h3>
          {dead?.webhook ? <pre data-testid="payload">{payloadText(dead.webhook.payload)}</pre> : <p>The body is kept in Kafka while the webhook is under way; it shows here once the webhook is dead-lettered.</p>}
        </section>
        <section aria-labelledby="res-title">
          <h2 id="res-title">The last response</h2>
          {last ? (
            <>
              <p>
                {last.status_code !== null ? `HTTP ${last.status_code}` : (last.error ?? 'no response')} after {span(last.duration_ms)}, at {clock(last.at)} UTC
                {last.retry_after ? `, Retry-After ${last.retry_after}` : ''}
              </p>
              <h3>First bytes</h3>
              <pre data-testid="response">{dead?.last_response ?? (last as { response?: string }).response ?? '(empty)'}</pre>
            </>
          ) : (
            <p>No response yet.</p>
          )}
        </section>
      </div>
    </section>
  );
};
