import { useEffect, useState } from 'preact/hooks';
import { ApiError, apiGet, apiRequest } from './api';

// Calls that change something (POST, PUT, DELETE) and what the signed-in key may do, for the
// pages with buttons: a key without the admin scope sees them disabled, with the reason.

export const apiSend = <T>(method: 'POST' | 'PUT' | 'DELETE', path: string, key: string | null, body?: unknown): Promise<T> => apiRequest<T>(method, path, key, body);

/** "message (field)" of an API error. */
export const errorText = (e: unknown): string => (e instanceof ApiError ? e.message + (e.field ? ` (${e.field})` : '') : String(e));

export type KeyInfo = { id: string; name: string; scopes: string[]; config_ids: string[] | null };

/** What the page may do: `act` (admin scope, or auth off), `manageKeys` (admin bound to no config), and why not. */
export type Rights = { known: boolean; act: boolean; manageKeys: boolean; why: string | null; key: KeyInfo | null };

const ALL: Rights = { known: true, act: true, manageKeys: true, why: null, key: null };

export const rightsOf = (info: { auth: boolean; key: KeyInfo | null }): Rights => {
  if (!info.auth || !info.key) return ALL;
  const admin = info.key.scopes.includes('admin');
  return {
    known: true,
    act: admin,
    manageKeys: admin && info.key.config_ids === null,
    why: admin ? null : `This key (${info.key.name || info.key.id}) has the ${info.key.scopes.join(', ')} scope: actions need a key with the admin scope.`,
    key: info.key,
  };
};

/** GET /keys/me once per key. */
export const useRights = (apiKey: string | null): Rights => {
  const [rights, setRights] = useState<Rights>({ known: false, act: false, manageKeys: false, why: 'Checking what this key may do…', key: null });
  useEffect(() => {
    let live = true;
    apiGet<{ auth: boolean; key: KeyInfo | null }>('/keys/me', apiKey).then(
      (i) => live && setRights(rightsOf(i)),
      (e) => live && setRights({ known: true, act: false, manageKeys: false, why: `What this key may do is unknown: ${errorText(e)}`, key: null }),
    );
    return () => void (live = false);
  }, [apiKey]);
  return rights;
};

export type PageProps = { apiKey: string | null; query: URLSearchParams; onUnauthorized: () => void };

/** ISO time without its milliseconds. */
export const time = (iso: string | null | undefined): string => (iso ? iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '—');

/**
 * GET `path` (null: nothing to read, data null) again whenever `path`, the key or `tick`
 * changes; an answer that arrives after a newer request is dropped; 401 signs the tab out.
 */
export const useApiResource = <T>(path: string | null, apiKey: string | null, tick: number, onUnauthorized: () => void): { data: T | null; error: string | null } => {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    if (!path) return setData(null);
    let live = true;
    apiGet<T>(path, apiKey)
      .then((d) => live && (setData(d), setError(null)))
      .catch((e: ApiError) => {
        if (!live) return;
        if (e.status === 401) onUnauthorized();
        setData(null);
        setError(errorText(e));
      });
    return () => void (live = false);
  }, [path, apiKey, tick]);
  return { data, error };
};
