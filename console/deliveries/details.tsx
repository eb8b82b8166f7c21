import { useEffect, useState } from 'preact/hooks';
import { apiGet } from '../api';
import { Payload } from '../payload';
import type { DeadLetterView, Row, Status } from './types';

// One delivery's attempts (GET /webhooks/:id/status) and, once it is dead-lettered, its
// payload and the last response (GET /deadletter/:id). Shown as text, never as markup.

const DEAD = new Set(['failed', 'exhausted']);

export const Details = ({ row, apiKey }: { row: Row; apiKey: string | null }) => {
  const [status, setStatus] = useState<Status | null>(null);
  const [dead, setDead] = useState<DeadLetterView | null>(null);
  const [error, setError] = useState<string | null>(null);
  const id = encodeURIComponent(row.webhook_id);
  useEffect(() => {
    apiGet<Status>(`/webhooks/${id}/status`, apiKey).then(setStatus, (e: Error) => setError(e.message));
    if (DEAD.has(row.state)) apiGet<DeadLetterView>(`/deadletter/${id}`, apiKey).then(setDead, () => setDead(null));
  }, [id, row.state, apiKey]);
  if (error) return <p role="alert">{error}</p>;
  if (!status) return <p>Loading…</p>;
  return (
    <div class="details">
      <h2>Attempts of {row.webhook_id}</h2>
      {status.history.length === 0 ? (
        <p>No attempt yet.</p>
      ) : (
        <ol>
          {status.history.map((a) => (
            <li key={`${a.attempt}-${a.at}`}>
              Attempt {a.attempt} at {a.at}: {a.outcome}
              {a.status_code !== null ? `, HTTP ${a.status_code}` : ''}
              {a.error && a.error !== `HTTP ${a.status_code}` ? `, ${a.error}` : ''} ({a.duration_ms} ms)
            </li>
          ))}
        </ol>
      )}
      {status.dead_reason && <p>Dead-lettered: {status.dead_reason}</p>}
      {dead && (
        <>
          <h3>Payload</h3>
          <Payload value={dead.webhook?.payload} />
          {dead.last_response ? (
            <>
              <h3>Last response (first 1 KB)</h3>
              <pre data-testid="last-response">{dead.last_response}</pre>
            </>
          ) : null}
        </>
      )}
    </div>
  );
};
