import type { DeadLetterView, Status } from '../deliveries/types';
import { Payload } from '../payload';
import { navigate } from '../router';
import { clock, span, type HistoryEntry } from './sentences';

// The Inspector's panels: the webhook's facts, the request, the last response (text only).

/** Beyond the Deliveries page's Attempt: the Inspector also shows the response's first bytes and the signing headers sent. */
export type FullAttempt = HistoryEntry & { response?: string; signed?: Record<string, string> };
export type FullStatus = Status & { history: FullAttempt[] };

// The headers every delivery carries besides the webhook's own (docs/SIGNING.md).
const SIGNED = ['webhook-id', 'webhook-timestamp', 'webhook-signature'];
const UNKNOWN = 'set at each attempt: the signature covers id, timestamp and body (the secret is never shown)';

/** The signing headers of the last attempt as sent, where its history entry kept them. */
const signing = (id: string, last: FullAttempt | undefined): [string, string][] => {
  const kept = last?.signed ?? {};
  const names = [...SIGNED, ...Object.keys(kept).filter((k) => !SIGNED.includes(k))];
  return names.map((h) => [h, h === 'webhook-id' ? id : (kept[h] ?? UNKNOWN)]);
};

const open = (id: string) => (e: Event) => {
  e.preventDefault();
  navigate(`/console/webhooks/${encodeURIComponent(id)}`);
};

export const Facts = ({ status }: { status: FullStatus }) => (
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
          <a href={`/console/webhooks/${encodeURIComponent(status.replay_of)}`} onClick={open(status.replay_of)}>
            {status.replay_of}
          </a>
        </dd>
      </>
    )}
  </dl>
);

export const Request = ({ status, dead, last }: { status: FullStatus; dead: DeadLetterView | null; last: FullAttempt | undefined }) => (
  <section aria-labelledby="req-title">
    <h2 id="req-title">The request</h2>
    <p>
      <code>POST {status.endpoint}</code>
    </p>
    <h3>Headers{last?.signed ? ' (signing headers of the last attempt)' : ''}</h3>
    <table class="req-headers">
      <caption class="visually-hidden">Headers of the request</caption>
      <tbody>
        {signing(status.webhook_id, last).map(([h, v]) => (
          <tr key={h}>
            <th scope="row">{h}</th>
            <td data-testid={`header-${h}`}>{v}</td>
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
    {dead?.webhook ? (
      <Payload value={dead.webhook.payload} />
    ) : (
      <p>The body is not kept in the hot state (only in Kafka); it shows here once the webhook is dead-lettered, from its dead letter.</p>
    )}
  </section>
);

export const LastResponse = ({ last, dead }: { last: FullAttempt | undefined; dead: DeadLetterView | null }) => (
  <section aria-labelledby="res-title">
    <h2 id="res-title">The last response</h2>
    {last ? (
      <>
        <p>
          {last.status_code !== null ? `HTTP ${last.status_code}` : (last.error ?? 'no response')} after {span(last.duration_ms)}, at {clock(last.at)} UTC
          {last.retry_after ? `, Retry-After ${last.retry_after}` : ''}
        </p>
        <h3>First bytes</h3>
        <pre data-testid="response">{dead?.last_response ?? last.response ?? '(empty)'}</pre>
      </>
    ) : (
      <p>No response yet.</p>
    )}
  </section>
);
