import { useEffect, useState } from 'preact/hooks';
import { ApiError, apiGet } from '../api';
import { errorText } from '../actions';

// The transformers this server loaded (GET /transformers), read only: they come from files
// on the server. Each opens to its settings and source, as text.

type Transformer = { name: string; config_id: string; settings: Record<string, unknown>; auth: { kind: string; users: number | null }; code: string };

const authText = (a: Transformer['auth']) =>
  a.kind === 'none' ? 'public' : a.kind === 'passwd' ? `Basic auth, ${a.users} user${a.users === 1 ? '' : 's'}` : 'refused (unreadable passwd file)';

export const Transformers = ({ apiKey }: { apiKey: string | null }) => {
  const [items, setItems] = useState<Transformer[] | null>(null);
  const [note, setNote] = useState<string | null>(null);
  useEffect(() => {
    apiGet<{ items: Transformer[] }>('/transformers', apiKey).then(
      (r) => setItems(r.items),
      (e) => setNote(e instanceof ApiError && e.status === 404 ? 'This server loaded no transformers (transformer.script_dirs).' : errorText(e)),
    );
  }, [apiKey]);
  return (
    <section class="panel transformers" aria-labelledby="tr-title">
      <h2 id="tr-title">Transformers (/incoming)</h2>
      <p class="muted">Loaded from the server's script directories; read only here.</p>
      {note && <p class="status">{note}</p>}
      {items && items.length === 0 && <p class="status">No transformer is loaded.</p>}
      {items?.map((t) => (
        <details key={t.name} data-testid={`tr-${t.name}`}>
          <summary>
            <code>POST /incoming/{t.name}</code> → config {t.config_id} · {authText(t.auth)}
          </summary>
          <pre>{JSON.stringify(t.settings, null, 2)}</pre>
          <pre class="source">{t.code}</pre>
        </details>
      ))}
    </section>
  );
};
