import { useEffect, useRef, useState } from 'preact/hooks';
import { ErrorAlert } from '../alert';
import { ApiError, apiGet } from '../api';
import { apiSend, errorText, time, useRights, type PageProps } from '../actions';
import { useShortcuts } from '../keys';
import { CreateKey } from './create';
import type { KeyRow } from './types';

// API keys (admin scope, bound to no config): GET /keys, POST /keys (the secret shown once),
// DELETE /keys/:id after a confirmation on the row.

export const ApiKeys = ({ apiKey, onUnauthorized }: PageProps) => {
  const [keys, setKeys] = useState<KeyRow[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [confirm, setConfirm] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  const nameInput = useRef<HTMLInputElement>(null);
  const rights = useRights(apiKey);
  const refresh = () => setTick((t) => t + 1);

  useEffect(() => {
    if (!rights.known) return;
    if (!rights.manageKeys) return setKeys(null);
    let live = true;
    apiGet<{ keys: KeyRow[] }>('/keys', apiKey)
      .then((r) => live && (setKeys(r.keys), setError(null)))
      .catch((e: ApiError) => {
        if (!live) return;
        if (e.status === 401) onUnauthorized();
        setError(errorText(e));
      });
    return () => void (live = false);
  }, [apiKey, tick, rights.known, rights.manageKeys]);

  const revoke = (k: KeyRow) =>
    apiSend<KeyRow>('DELETE', `/keys/${k.id}`, apiKey).then(
      () => (setConfirm(null), setNotice(`Key ${k.name || k.id} revoked: it stops working at once.`), refresh()),
      (e) => setNotice(`Revoking ${k.id} refused: ${errorText(e)}`),
    );
  useShortcuts('Keys', [
    { key: 'a', label: 'Add a key (focus its name)', run: () => nameInput.current?.focus() },
    { key: 'r', label: 'Refresh', run: refresh },
  ]);

  return (
    <section aria-labelledby="keys-title">
      <h1 id="keys-title">API keys</h1>
      {rights.known && !rights.manageKeys && (
        <p class="why" role="alert">
          Managing keys needs an admin key bound to no config.{rights.why ? ` ${rights.why}` : ''}
        </p>
      )}
      {rights.manageKeys && <CreateKey apiKey={apiKey} nameRef={nameInput} onCreated={refresh} />}
      <p class="status" role="status">
        {notice}
      </p>
      <ErrorAlert text={error} />
      {keys && (
        <table class="deliveries">
          <caption>{keys.length} keys (secrets are never shown again; the server keeps only their hash)</caption>
          <thead>
            <tr>
              <th scope="col">Id</th>
              <th scope="col">Name</th>
              <th scope="col">Scopes</th>
              <th scope="col">Configs</th>
              <th scope="col">Created</th>
              <th scope="col">Status</th>
              <th scope="col">Action</th>
            </tr>
          </thead>
          <tbody>
            {keys.map((k) => (
              <tr key={k.id} data-testid={`key-${k.id}`}>
                <td class="mono">{k.id}</td>
                <td>
                  {k.name || '—'}
                  {rights.key?.id === k.id && <span class="muted"> (the key signed in here)</span>}
                </td>
                <td>{k.scopes.join(', ')}</td>
                <td>{k.config_ids ? k.config_ids.join(', ') : 'all'}</td>
                <td>{time(k.created_at)}</td>
                <td>{k.revoked_at ? <span class="bad">revoked {time(k.revoked_at)}</span> : <span class="ok">active</span>}</td>
                <td>
                  {!k.revoked_at &&
                    (confirm === k.id ? (
                      <span class="row">
                        <button type="button" class="danger" onClick={() => revoke(k)}>
                          Confirm revoke
                        </button>
                        <button type="button" onClick={() => setConfirm(null)}>
                          Cancel
                        </button>
                      </span>
                    ) : (
                      <button type="button" aria-label={`Revoke ${k.name || k.id}`} onClick={() => setConfirm(k.id)}>
                        Revoke
                      </button>
                    ))}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
};
