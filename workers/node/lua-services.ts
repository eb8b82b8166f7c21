import { Agent, fetch as undiciFetch } from 'undici';
import type { Config } from '../../core/config/schema';
import {
  CREDENTIAL_KEY_ENV,
  CredentialError,
  credentialKeysFromEnv,
  credentialSession,
  namespaceChain,
  parseEnvelope,
  type FetchLike,
  type HttpPolicy,
  type LuaHostServices,
} from '../../core/lua';
import type { Logger } from '../../core/ports/logger';
import { destinationPolicy } from '../../core/security/destination';
import { createLuaPool, type LuaPoolOptions } from './lua-pool/pool';
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
    try {
      const { keyId } = parseEnvelope(name, envelope);
      if (!keyIds.has(keyId)) log.warn(`lua.credentials entry needs ${CREDENTIAL_KEY_ENV}${keyId}, which is not set`, { credential: name });
    } catch (e) {
      // An lcred:v1 envelope is unscoped: the message says how to re-encrypt it.
      log.warn(`lua.credentials entry cannot be used: ${e instanceof CredentialError ? e.message : String(e)}`, { credential: name });
    }
  }
  for (const v of config.lua.secret_env_allowlist) {
    if (!env[v]) log.warn('lua.secret_env_allowlist names a variable that is not set here: webhooks using it dead-letter as secret_missing', { variable: v });
    if (!Object.hasOwn(config.lua.secret_env_hosts, v))
      log.warn('lua.secret_env_allowlist names a variable without lua.secret_env_hosts: webhooks using it dead-letter as secret_host_not_allowed', { variable: v });
  }
};

export const nodeLuaServices = async (
  config: Config,
  env: Record<string, string | undefined> = process.env,
  log?: Logger,
  observe?: LuaPoolOptions['observe'],
): Promise<NodeLuaServices> => {
  const keys = await credentialKeysFromEnv(env);
  if (log) checkConfig(config, env, new Set(keys.keys()), log);
  const { fetch: fetchFn, close } = guardedFetch(config.delivery.allowed_networks);
  const lists = config.lua.http_allowlist;
  const base = { timeoutMs: config.lua.http_timeout, maxResponseBytes: config.lua.http_max_response_bytes };
  // Scripts run in worker threads that are terminated past their limits; the services above
  // stay here and are reached by message (workers/node/lua-pool).
  const engine = createLuaPool({
    size: config.lua.threads,
    marginMs: config.lua.hard_stop_margin,
    limits: { timeoutMs: config.lua.timeout, memoryLimitMb: config.lua.memory_limit_mb },
    observe,
  });
  return {
    forNamespace(namespace, extraHosts = [], credentialNamespace = namespace) {
      // The most specific entry wins, as with delivery scripts (wh:42:6 → wh:42 → wh).
      const own = namespaceChain(namespace).find((ns) => Object.hasOwn(lists, ns));
      const http: HttpPolicy = { ...base, allow: [...(own ? lists[own]! : []), ...extraHosts] };
      const credentials = credentialSession(keys, config.lua.credentials, credentialNamespace);
      // Once the run has opened a credential, its http calls may only go to that credential's hosts.
      const scopedFetch: FetchLike = (url, init) => {
        const refused = credentials.hostRefusal(new URL(url).hostname);
        if (refused) return Promise.reject(new Error(`credential_host_not_allowed: credential ${refused.name} may not be sent to ${new URL(url).hostname}`));
        return fetchFn(url, init);
      };
      return { fetch: scopedFetch, http, decryptCredential: (name) => credentials.decrypt(name), credentials };
    },
    env: (name) => env[name],
    engine,
    close: async () => {
      await engine.close();
      await close();
    },
  };
};
