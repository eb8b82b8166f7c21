import { Agent, fetch as undiciFetch } from 'undici';
import type { Config } from '../../core/config/schema';
import { CREDENTIAL_KEY_ENV, CREDENTIAL_PREFIX, credentialKeysFromEnv, credentialStore, namespaceChain, type FetchLike, type HttpPolicy, type LuaHostServices } from '../../core/lua';
import type { Logger } from '../../core/pipeline/logger';
import { destinationPolicy } from '../../core/security/destination';
import { createLuaPool } from './lua-pool/pool';
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

/** Mistakes that would otherwise only show when a script runs: said once, at start-up. */
const checkConfig = (config: Config, env: Record<string, string | undefined>, keyIds: ReadonlySet<string>, log: Logger): void => {
  for (const [ns, hosts] of Object.entries(config.lua.http_allowlist)) {
    for (const h of hosts) {
      // Entries are host names: a scheme, port or path would never match.
      if (!/^(\*\.)?[A-Za-z0-9._-]+$|^[0-9a-fA-F:]+$/.test(h)) log.warn('lua.http_allowlist entry is not a host name and matches nothing', { namespace: ns, entry: h });
    }
  }
  for (const [name, envelope] of Object.entries(config.lua.credentials)) {
    const id = envelope.startsWith(CREDENTIAL_PREFIX) ? envelope.slice(CREDENTIAL_PREFIX.length).split(':')[0] : undefined;
    if (id === undefined) log.warn('lua.credentials entry is not an lcred:v1 envelope', { credential: name });
    else if (!keyIds.has(id)) log.warn(`lua.credentials entry needs ${CREDENTIAL_KEY_ENV}${id}, which is not set`, { credential: name });
  }
  for (const v of config.lua.secret_env_allowlist) {
    if (!env[v]) log.warn('lua.secret_env_allowlist names a variable that is not set here: webhooks using it dead-letter as secret_missing', { variable: v });
  }
};

export const nodeLuaServices = async (config: Config, env: Record<string, string | undefined> = process.env, log?: Logger): Promise<NodeLuaServices> => {
  const keys = await credentialKeysFromEnv(env);
  if (log) checkConfig(config, env, new Set(keys.keys()), log);
  const { fetch: fetchFn, close } = guardedFetch(config.delivery.allowed_networks);
  const decrypt = credentialStore(keys, config.lua.credentials);
  const lists = config.lua.http_allowlist;
  const base = { timeoutMs: config.lua.http_timeout, maxResponseBytes: config.lua.http_max_response_bytes };
  // Scripts run in worker threads that are terminated past their limits; the services above
  // stay here and are reached by message (workers/node/lua-pool).
  const engine = createLuaPool({ limits: { timeoutMs: config.lua.timeout, memoryLimitMb: config.lua.memory_limit_mb } });
  return {
    forNamespace(namespace, extraHosts = []) {
      // The most specific entry wins, as with delivery scripts (wh:42:6 → wh:42 → wh).
      const own = namespaceChain(namespace).find((ns) => Object.hasOwn(lists, ns));
      const http: HttpPolicy = { ...base, allow: [...(own ? lists[own]! : []), ...extraHosts] };
      return { fetch: fetchFn, http, decryptCredential: decrypt };
    },
    env: (name) => env[name],
    engine,
    close: async () => {
      await engine.close();
      await close();
    },
  };
};
