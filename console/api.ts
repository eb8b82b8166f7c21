// The API from the browser: same origin, the key (when auth is on) as a bearer token.

const KEY = 'howk.console.apiKey';

export type ServerInfo = {
  auth: boolean;
  server: string;
  /** The retry policy (the Inspector's sentences). */ retry?: { base_delay: number; max_delay: number; jitter: number; max_deferrals: number };
};

export const serverInfo = async (): Promise<ServerInfo> => {
  const r = await fetch('/console/env.json');
  if (!r.ok) throw new Error(`the console's settings did not load (HTTP ${r.status})`);
  return (await r.json()) as ServerInfo;
};

/** Kept for this tab only: sessionStorage is cleared when the tab closes. */
export const storedKey = (): string | null => sessionStorage.getItem(KEY);
export const storeKey = (key: string | null): void => (key ? sessionStorage.setItem(KEY, key) : sessionStorage.removeItem(KEY));

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

/** A call to the API: the JSON answer, or an ApiError with the error's code, message and field. */
export const apiRequest = async <T>(method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, key: string | null, body?: unknown): Promise<T> => {
  let r: Response;
  try {
    r = await fetch(path, {
      method,
      headers: {
        accept: 'application/json',
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...(key ? { authorization: `Bearer ${key}` } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
  } catch {
    throw new ApiError(0, 'network', 'the server did not answer');
  }
  const json = (await r.json().catch(() => null)) as { error?: { code?: string; message?: string; field?: string } } | null;
  if (!r.ok) {
    const e = json?.error;
    throw new ApiError(r.status, e?.code ?? 'http_error', e?.message ?? `HTTP ${r.status}`, e?.field);
  }
  return json as T;
};

export const apiGet = <T>(path: string, key: string | null): Promise<T> => apiRequest<T>('GET', path, key);
