import { CliError, type GlobalOpts } from './io';

// The howk-api HTTP client of the CLI: operator actions go through the API so that they work
// against any deployment and respect the key's scopes.

export type Api = {
  get<T = unknown>(path: string, query?: Record<string, string | number | undefined>): Promise<T>;
  post<T = unknown>(path: string, body?: unknown): Promise<{ status: number; body: T }>;
  url: string;
};

type ErrorBody = { error?: { code?: string; message?: string; field?: string } };

const describe = async (res: Response, what: string): Promise<CliError> => {
  const text = await res.text().catch(() => '');
  let e: ErrorBody['error'];
  try {
    e = (JSON.parse(text) as ErrorBody).error;
  } catch {
    // not JSON
  }
  const detail = e?.message ? `${e.message}${e.field ? ` (field ${e.field})` : ''}${e.code ? ` [${e.code}]` : ''}` : text.slice(0, 200) || res.statusText;
  const hint = res.status === 401 ? ' (give an API key with --key or HOWK_API_KEY)' : res.status === 403 ? ' (the key lacks the scope or the config)' : '';
  return new CliError(`${what}: HTTP ${res.status}: ${detail}${hint}`);
};

export const apiClient = (g: GlobalOpts, env: Record<string, string | undefined> = process.env): Api => {
  const url = (g.url ?? env.HOWK_URL ?? 'http://127.0.0.1:8080').replace(/\/+$/, '');
  const key = g.key ?? env.HOWK_API_KEY;
  const headers: Record<string, string> = { accept: 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) };
  const call = async (method: string, path: string, body?: unknown): Promise<Response> => {
    try {
      return await fetch(url + path, {
        method,
        headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(30_000),
      });
    } catch (e) {
      throw new CliError(`howk-api at ${url} is unreachable (${(e as Error).cause ? String((e as Error).cause) : (e as Error).message}): set --url or HOWK_URL`);
    }
  };
  return {
    url,
    get: async <T>(path: string, query: Record<string, string | number | undefined> = {}) => {
      const q = new URLSearchParams(Object.entries(query).flatMap(([k, v]) => (v === undefined ? [] : [[k, String(v)]])));
      const res = await call('GET', q.size ? `${path}?${q}` : path);
      if (!res.ok) throw await describe(res, `GET ${path}`);
      return (await res.json()) as T;
    },
    post: async <T>(path: string, body?: unknown) => {
      const res = await call('POST', path, body ?? {});
      if (!res.ok) throw await describe(res, `POST ${path}`);
      return { status: res.status, body: (await res.json()) as T };
    },
  };
};
