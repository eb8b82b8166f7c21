import type { Config } from '../config/schema';
import type { ScriptReason } from '../domain/status';
import type { Webhook } from '../domain/webhook';
import { errorMessage } from '../errors/errors';
import { LuaError, redactDeep, redactor, runDeliveryScript, type CredentialSession, type KvStore, type LuaHostServices } from '../lua';
import type { Logger } from '../ports/logger';
import { fromBase64 } from '../signing/encoding';
import { resolveDelivery } from '../transformers/secret-templates';

/** What one attempt sends, before it is signed. */
export type Prepared = { body: string | Uint8Array; headers: Record<string, string>; retryOn: readonly number[]; scripted: boolean; credentials?: CredentialSession };
/** Why nothing could be sent (dead-lettered at once): a script, a secret, a credential or the endpoint. */
export type NotPrepared = { failed: ScriptReason; message: string; kind?: 'secret' | 'credential' | 'endpoint' };
/** Where it goes: the endpoint with its ${VAR} templates resolved. */
export type Target = { url: string; headers: Record<string, string> };

export type PrepareDeps = {
  config: Config;
  log: Logger;
  /** The delivery script of a config (own or an ancestor's) and the config it is stored on, run before signing (docs/LUA.md). */
  deliveryScript?: (configId: string) => { code: string; owner: string } | undefined;
  /** Why the webhook's Svix API endpoint no longer takes it (disabled since it was queued), if it does not (core/apps/endpoint-rules.ts). */
  endpointDisabled?: (w: Webhook) => string | undefined;
  /** Store of the Lua kv module (keys kv:{config_id}:{key}). */
  luaKv?: KvStore;
  /** Lua http (guarded fetch, allowlist of the config's namespace), credentials, and the env of ${VAR} templates. */
  lua?: LuaHostServices;
};

/** What is sent: the JSON payload's text, or a raw body's bytes. */
const bodyOf = (w: Webhook): string | Uint8Array => (w.body_base64 !== undefined ? fromBase64(w.body_base64) : w.payload);
const unscripted = (config: Config, w: Webhook): Prepared => ({ body: bodyOf(w), headers: w.headers, retryOn: config.retry.retry_on_status, scripted: false });

/**
 * Runs the config's delivery script on the ORIGINAL payload and headers of the webhook (a
 * retry runs it again on them, never on a transformed body); what it returns is only sent,
 * never stored. A failure is the LuaError's code.
 */
const runScript = async (d: PrepareDeps, w: Webhook, script: { code: string; owner: string }): Promise<Prepared | NotPrepared> => {
  const { config } = d;
  const { code, owner } = script;
  // http allowlist of the webhook's config; credentials of the config the script is stored on.
  const { credentials, ...host } = d.lua?.forNamespace(w.config_id, [], owner) ?? {};
  // What the run decrypted never reaches a log line or a dead-letter reason.
  const redact = () => redactor(credentials?.used.map((u) => u.plaintext) ?? []);
  const log = (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => {
    const r = redact();
    d.log[level](`delivery script of ${w.config_id}: ${r(message)}`, { ...(redactDeep(r, fields) as Record<string, unknown>), webhook_id: w.id });
  };
  try {
    const r = await runDeliveryScript(
      code,
      {
        payload: w.payload,
        headers: w.headers,
        config_id: w.config_id,
        attempt: w.attempt,
        webhook_id: w.id,
        endpoint: w.endpoint,
        max_attempts: w.max_attempts,
        retry_on_status: [...config.retry.retry_on_status],
      },
      { engine: d.lua?.engine, limits: { timeoutMs: config.lua.timeout, memoryLimitMb: config.lua.memory_limit_mb }, services: { kv: d.luaKv, ...host, log } },
    );
    const retryOn = r.retry_on_status ? [...new Set([...config.retry.retry_on_status, ...r.retry_on_status])] : config.retry.retry_on_status;
    // A raw body is not the script's to rewrite (it sees payload null): its headers and statuses apply.
    return { body: w.body_base64 !== undefined ? bodyOf(w) : r.body, headers: r.headers, retryOn, scripted: true, credentials };
  } catch (e) {
    if (e instanceof LuaError) return { failed: e.code, message: redact()(e.message) };
    return { failed: 'script_runtime_error', message: redact()(errorMessage(e)) };
  }
};

/**
 * The prepare stage of an attempt: the endpoint still takes it, the delivery script ran, a
 * credential it opened may go to this host, the ${VAR} templates resolve. Without a script
 * nothing waits: no promise for the common case.
 */
export const createPreparer = (d: PrepareDeps) => {
  const { config } = d;
  // ${VAR} templates of the webhook (transformers' _delivery_headers / _delivery_query_params)
  // are resolved here, right before sending: the values live only in this request, never in
  // the webhook record, so no topic, Redis key or log line has them.
  const secretAllow: ReadonlySet<string> = new Set(config.lua.secret_env_allowlist);
  const secretEnv = (name: string): string | undefined => d.lua?.env(name);

  const script = (w: Webhook): Prepared | Promise<Prepared | NotPrepared> => {
    const s = d.deliveryScript?.(w.config_id);
    return s === undefined ? unscripted(config, w) : runScript(d, w, s);
  };

  const finish = (w: Webhook, host: string, off: string | undefined, prepared: Prepared | NotPrepared): { p: Prepared; target: Target } | NotPrepared => {
    if (off !== undefined) return { failed: 'endpoint_disabled', message: off, kind: 'endpoint' };
    if ('failed' in prepared) return prepared;
    // A run that opened a credential may only send to that credential's hosts: the endpoint
    // was chosen at enqueue, possibly by a key that may not see the credential.
    const refused = prepared.credentials?.hostRefusal(host);
    if (refused) return { failed: 'credential_host_not_allowed', message: `credential ${refused.name} may not be sent to ${host}`, kind: 'credential' };
    const resolved = resolveDelivery(w, secretAllow, secretEnv, config.lua.secret_env_hosts);
    if (!resolved.ok) return { failed: resolved.reason_type, message: resolved.message, kind: 'secret' };
    return { p: prepared, target: { url: resolved.url, headers: resolved.headers } };
  };

  return (w: Webhook, host: string): { p: Prepared; target: Target } | NotPrepared | Promise<{ p: Prepared; target: Target } | NotPrepared> => {
    const off = d.endpointDisabled?.(w);
    const pending = off === undefined ? script(w) : unscripted(config, w);
    return pending instanceof Promise ? pending.then((p) => finish(w, host, off, p)) : finish(w, host, off, pending);
  };
};
