import { ApiError } from '../api';

/** A POST of the console's actions (retry, replay); a refusal becomes an ApiError with the server's message. */
export const apiPostJson = async <T>(path: string, key: string | null, body: unknown = {}): Promise<T> => {
  let r: Response;
  try {
    r = await fetch(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
      body: JSON.stringify(body),
    });
  } catch {
    throw new ApiError(0, 'network', 'the server did not answer');
  }
  const out = (await r.json().catch(() => null)) as { error?: { code?: string; message?: string; field?: string } } | null;
  if (!r.ok) throw new ApiError(r.status, out?.error?.code ?? 'http_error', out?.error?.message ?? `HTTP ${r.status}`, out?.error?.field);
  return out as T;
};
