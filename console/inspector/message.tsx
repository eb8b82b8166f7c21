import { useEffect, useState } from 'preact/hooks';
import { apiGet } from '../api';
import { navigate } from '../router';

// A webhook a Svix message made: its message, the registered endpoint it went to (a link to that
// endpoint on the Endpoints page) and the webhooks of the message's other endpoints
// (GET /webhooks/:id/message). A webhook sent by an enqueue has none, and shows nothing.

type Origin = {
  app_id: string;
  app_uid: string | null;
  msg_id: string;
  event_type: string;
  endpoint_id: string;
  endpoint_uid: string | null;
  deliveries: { endpoint_id: string; webhook_id: string }[];
};

const go = (to: string) => (e: Event) => (e.preventDefault(), navigate(to));

export const MessageOrigin = ({ id, apiKey }: { id: string; apiKey: string | null }) => {
  const [o, setO] = useState<Origin | null>(null);
  useEffect(() => {
    let live = true;
    setO(null);
    apiGet<Origin>(`/webhooks/${encodeURIComponent(id)}/message`, apiKey).then(
      (v) => live && setO(v),
      () => live && setO(null),
    );
    return () => void (live = false);
  }, [id, apiKey]);
  if (!o) return null;
  const endpoint = `/console/endpoints?config_id=${encodeURIComponent(o.app_id)}&endpoint=${encodeURIComponent(o.endpoint_id)}`;
  const others = o.deliveries.filter((x) => x.webhook_id !== id);
  return (
    <dl class="facts" data-testid="origin" aria-label="Svix message">
      <dt>Message</dt>
      <dd class="mono" data-testid="msg-id">
        {o.msg_id} ({o.event_type}) of application {o.app_uid ?? o.app_id}
      </dd>
      <dt>Registered endpoint</dt>
      <dd>
        <a href={endpoint} onClick={go(endpoint)}>
          {o.endpoint_uid ?? o.endpoint_id}
        </a>
      </dd>
      {others.length > 0 && (
        <>
          <dt>Same message, other endpoints</dt>
          <dd>
            {others.map((x, i) => (
              <span key={x.webhook_id}>
                {i > 0 && ', '}
                <a href={`/console/webhooks/${encodeURIComponent(x.webhook_id)}`} onClick={go(`/console/webhooks/${encodeURIComponent(x.webhook_id)}`)}>
                  {x.webhook_id}
                </a>
              </span>
            ))}
          </dd>
        </>
      )}
    </dl>
  );
};
