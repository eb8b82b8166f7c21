import { useEffect, useState } from 'preact/hooks';
import { ApiError, apiGet } from '../api';
import { useShortcuts } from '../keys';
import { navigate } from '../router';
import { MessageOrigin } from './message';
import { apiPostJson } from './post';
import type { DeadLetterView } from '../deliveries/types';
import { Facts, LastResponse, Request, type FullStatus } from './parts';
import { describeHistory, type RetryNumbers } from './sentences';
import './inspector.css';

// The Inspector: one webhook's story (GET /webhooks/:id/status), its request and last
// response, retry now and replay as a new webhook. Every value is a text node.

type Props = { id: string; apiKey: string | null; retry: RetryNumbers | null; onUnauthorized: () => void };

const DEAD = new Set(['failed', 'exhausted']);

export const Inspector = ({ id, apiKey, retry, onUnauthorized }: Props) => {
  const [status, setStatus] = useState<FullStatus | null>(null);
  const [dead, setDead] = useState<DeadLetterView | null>(null);
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
        if (DEAD.has(s.state))
          apiGet<DeadLetterView>(`/deadletter/${path}`, apiKey).then(
            (d) => live && setDead(d),
            () => live && setDead(null),
          );
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
      <Facts status={status} />
      <MessageOrigin id={status.webhook_id} apiKey={apiKey} />

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
        <Request status={status} dead={dead} last={last} />
        <LastResponse last={last} dead={dead} />
      </div>
    </section>
  );
};
