import { keys } from '../domain/keys';
import { argText, pushNilErr, startAsync, type Host, type RunState } from './host';
import { checkUrl, httpRequest } from './http';
import { type Vm } from './runtime';
import { T_NIL, T_STRING, T_TABLE } from './wasm-api';
import { readLua, stringifyJson } from './values';

// Host functions that wait on the outside world (kv, http, credentials). Each checks
// its arguments synchronously (so misuse fails at once, as (nil, err)) and then
// starts the async work through startAsync; the prelude's `await` yields the script.

const MAX_KEY_BYTES = 512;
const MAX_VALUE_BYTES = 256 * 1024;
const MAX_TTL_SECONDS = 366 * 24 * 3600;
const METHODS = new Set(['GET', 'POST', 'PUT', 'DELETE']);

/** The full key, or undefined after pushing (nil, err) for a bad one. */
const kvKey = (vm: Vm, L: number, s: RunState, fn: string): string | undefined => {
  const raw = argText(vm, L, 1, fn);
  if (raw.length === 0 || raw.length > MAX_KEY_BYTES) {
    pushNilErr(vm, L, `kv key must be 1-${MAX_KEY_BYTES} characters`);
    return undefined;
  }
  return keys.kv(s.services.kvScope ?? { kind: 'config', id: '' }, raw);
};

const stringMap = (v: unknown, what: string): Record<string, string> => {
  if (v === undefined) return {};
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error(`${what} must be a table of strings`);
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(v)) {
    if (typeof x !== 'string' && typeof x !== 'number') throw new Error(`${what}.${k} must be a string`);
    out[k] = String(x);
  }
  return out;
};

export const ioHost: Record<string, Host> = {
  kv_get(vm, L, s) {
    const store = s.services.kv;
    if (!store) return pushNilErr(vm, L, 'kv is not configured');
    const key = kvKey(vm, L, s, 'kv.get');
    if (key === undefined) return 2;
    return startAsync(vm, L, s, async () => [(await store.get(key)) ?? undefined]);
  },
  kv_set(vm, L, s) {
    const store = s.services.kv;
    if (!store) return pushNilErr(vm, L, 'kv is not configured');
    const key = kvKey(vm, L, s, 'kv.set');
    if (key === undefined) return 2;
    const value = argText(vm, L, 2, 'kv.set');
    if (value.length > MAX_VALUE_BYTES) return pushNilErr(vm, L, `kv value exceeds ${MAX_VALUE_BYTES} bytes`);
    let ttl: number | undefined;
    if (vm.type(L, 3) !== T_NIL) {
      ttl = Number(vm.text(L, 3));
      if (!Number.isInteger(ttl) || ttl < 1 || ttl > MAX_TTL_SECONDS) return pushNilErr(vm, L, `ttl_seconds must be an integer between 1 and ${MAX_TTL_SECONDS}`);
    }
    return startAsync(vm, L, s, async () => {
      await store.set(key, value, ttl);
      return [true];
    });
  },
  kv_del(vm, L, s) {
    const store = s.services.kv;
    if (!store) return pushNilErr(vm, L, 'kv is not configured');
    const key = kvKey(vm, L, s, 'kv.del');
    if (key === undefined) return 2;
    return startAsync(vm, L, s, async () => {
      await store.del(key);
      return [true];
    });
  },

  http(vm, L, s) {
    const { fetch: fetchFn, http: policy } = s.services;
    if (!fetchFn || !policy) return pushNilErr(vm, L, 'http is not configured');
    const method = argText(vm, L, 1, 'http');
    if (!METHODS.has(method)) throw new Error(`unsupported method ${method}`);
    const rawUrl = argText(vm, L, 2, `http.${method.toLowerCase()}`);
    let body: string | undefined;
    let headers: Record<string, string>;
    let timeoutMs: number | undefined;
    try {
      checkUrl(rawUrl, policy.allow);
      const opts = vm.type(L, 4) === T_TABLE ? (readLua(vm, L, 4, s.refs) as Record<string, unknown>) : {};
      headers = stringMap(opts.headers, 'opts.headers');
      if (opts.timeout_ms !== undefined) timeoutMs = Number(opts.timeout_ms);
      const bt = vm.type(L, 3);
      if (bt === T_STRING) body = vm.readString(L, 3);
      else if (bt === T_TABLE) {
        // A table body is sent as JSON, the common case for API calls.
        body = stringifyJson(readLua(vm, L, 3, s.refs));
        if (!Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['content-type'] = 'application/json';
      } else if (bt !== T_NIL) throw new Error('body must be a string or a table');
    } catch (e) {
      return pushNilErr(vm, L, (e as Error).message);
    }
    return startAsync(vm, L, s, async () => {
      const res = await httpRequest(fetchFn, policy, { method, url: rawUrl, body, headers, timeoutMs }, s.abort.signal);
      return [res];
    });
  },

  credential(vm, L, s) {
    const decrypt = s.services.decryptCredential;
    if (!decrypt) return pushNilErr(vm, L, 'credentials are not configured');
    const name = argText(vm, L, 1, 'crypto.decrypt_credential');
    return startAsync(vm, L, s, async () => {
      const v = await decrypt(name);
      if (v === null) throw new Error(`unknown credential: ${name}`);
      return [v];
    });
  },
};
