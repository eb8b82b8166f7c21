import type { RefObject } from 'preact';
import { useState } from 'preact/hooks';
import { ErrorAlert } from '../alert';
import { apiSend, errorText } from '../actions';
import type { KeyRow } from './types';

// Creating a key: name, scopes, configs. The secret is shown once, here, with a copy button;
// creating another key or leaving the page forgets it.

const SCOPES = ['enqueue', 'read', 'admin'] as const;

export const CreateKey = ({ apiKey, nameRef, onCreated }: { apiKey: string | null; nameRef: RefObject<HTMLInputElement | null>; onCreated: () => void }) => {
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<Set<string>>(new Set(['read']));
  const [configs, setConfigs] = useState('');
  const [created, setCreated] = useState<(KeyRow & { key: string }) | null>(null);
  const [copied, setCopied] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);

  const submit = (e: Event) => {
    e.preventDefault();
    const ids = configs
      .split(/[\s,]+/)
      .map((s) => s.trim())
      .filter(Boolean);
    setCreated(null);
    setCopied(null);
    apiSend<KeyRow & { key: string }>('POST', '/keys', apiKey, {
      ...(name.trim() ? { name: name.trim() } : {}),
      scopes: [...scopes],
      ...(ids.length ? { config_ids: ids } : {}),
    }).then(
      (k) => (setCreated(k), setError(null), setName(''), onCreated()),
      (x) => setError(errorText(x)),
    );
  };
  const copy = () =>
    navigator.clipboard?.writeText(created!.key).then(
      () => setCopied('Copied to the clipboard.'),
      () => setCopied('The browser refused the clipboard: select the key and copy it.'),
    ) ?? setCopied('No clipboard here: select the key and copy it.');
  const flip = (s: string) => {
    const next = new Set(scopes);
    if (next.has(s)) next.delete(s);
    else next.add(s);
    setScopes(next);
  };

  return (
    <form class="panel create-key" onSubmit={submit} aria-labelledby="ck-title">
      <h2 id="ck-title">Create a key</h2>
      <div class="filters">
        <label for="ck-name">Name</label>
        <input id="ck-name" ref={nameRef} value={name} maxLength={128} placeholder="billing reader" aria-keyshortcuts="a" onInput={(e) => setName(e.currentTarget.value)} />
        <fieldset class="scopes">
          <legend>Scopes</legend>
          {SCOPES.map((s) => (
            <label key={s}>
              <input type="checkbox" checked={scopes.has(s)} onChange={() => flip(s)} /> {s}
            </label>
          ))}
        </fieldset>
        <label for="ck-configs">Configs</label>
        <input id="ck-configs" value={configs} placeholder="all (or: tenant1, tenant2)" onInput={(e) => setConfigs(e.currentTarget.value)} />
        <button type="submit" disabled={scopes.size === 0}>
          Create key
        </button>
      </div>
      <ErrorAlert text={error} />
      {created && (
        <div class="secret" role="status" data-testid="new-key">
          <p>
            Key <strong>{created.name || created.id}</strong> created. Copy it now: it is shown <strong>once</strong> and cannot be read again.
          </p>
          <div class="row">
            <code data-testid="new-key-secret">{created.key}</code>
            <button type="button" onClick={copy}>
              Copy
            </button>
            <button type="button" onClick={() => setCreated(null)}>
              Done
            </button>
          </div>
          {copied && <p>{copied}</p>}
        </div>
      )}
    </form>
  );
};
