import { Agent, fetch as undiciFetch } from 'undici';
import type { Config } from '../../core/config/schema';
import { credentialKeysFromEnv, credentialStore, namespaceChain, type FetchLike, type HttpPolicy, type LuaHostServices } from '../../core/lua';
import { destinationPolicy } from '../../core/security/destination';
import { guardedConnector, isBlockedError } from './ssrf-guard';

// The Lua host services of a Node process (howk-api, howk-worker, howk-dev): one fetch for
// every script, through the same SSRF guard as deliveries (delivery.allowed_networks), the
// per-namespace host allowlists of lua.http_allowlist, and the credential keys of
// HOWK_LUA_CRYPTO_*. The http module itself (core/lua/http.ts) checks hosts on every
// redirect hop, bounds time and size; this fetch adds the address checks after DNS.

/** fetch errors carry the reason in `cause`; Lua gets that message, not "fetch failed". */
const reason = (e: unknown): Error => {
  const cause = (e as { cause?: unknown }).cause;
  if (isBlockedError(cause)) return new Error(`destination refused: ${cause.message}`);
  if (cause instanceof Error) {
    const code = (cause as { code?: string }).code;
    return new Error(code ? `${code}: ${cause.message}` : cause.message);
  }
  return e instanceof Error ? e : new Error(String(e));
};

export const guardedFetch = (allowedNetworks: readonly string[]): { fetch: FetchLike; close: () => Promise<void> } => {
  const agent = new Agent({ connect: guardedConnector(destinationPolicy(allowedNetworks)), connections: 16, keepAliveTimeout: 10_000 });
  const fetchFn: FetchLike = async (url, init) => {
    try {
      return (await undiciFetch(url, { ...init, dispatcher: agent })) as unknown as Response;
    } catch (e) {
      // An abort keeps its own reason (the http module turns it into the timeout message).
      if (init.signal.aborted) throw e;
      throw reason(e);
    }
  };
  return { fetch: fetchFn, close: () => agent.close() };
};

export type NodeLuaServices = LuaHostServices & { close(): Promise<void> };

export const nodeLuaServices = async (config: Config, env: Record<string, string | undefined> = process.env): Promise<NodeLuaServices> => {
  const { fetch: fetchFn, close } = guardedFetch(config.delivery.allowed_networks);
  const keys = await credentialKeysFromEnv(env);
  const decrypt = credentialStore(keys, config.lua.credentials);
  const lists = config.lua.http_allowlist;
  const base = { timeoutMs: config.lua.http_timeout, maxResponseBytes: config.lua.http_max_response_bytes };
  return {
    forNamespace(namespace, extraHosts = []) {
      // The most specific entry wins, as with delivery scripts (wh:42:6 → wh:42 → wh).
      const own = namespaceChain(namespace).find((ns) => Object.hasOwn(lists, ns));
      const http: HttpPolicy = { ...base, allow: [...(own ? lists[own]! : []), ...extraHosts] };
      return { fetch: fetchFn, http, decryptCredential: decrypt };
    },
    env: (name) => env[name],
    close,
  };
};
