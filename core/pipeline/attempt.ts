import type { Config } from '../config/schema';
import { encodeWebhook, type Webhook } from '../domain/webhook';
import type { ScriptReason } from '../domain/records';
import { errorMessage, InvalidSecretError } from '../errors/errors';
import { LuaError, redactDeep, redactor, runDeliveryScript, type CredentialSession, type KvStore, type LuaHostServices } from '../lua';
import type { CircuitOutcome } from '../policy/circuit';
import { classify, type Classification } from '../policy/classify';
import { decide } from '../policy/retry';
import type { Clock } from '../ports/clock';
import type { Admission, Completion, Guards, PauseScope } from '../ports/guards';
import type { DeliveryResponse, Sender } from '../ports/sender';
import { findHeaderIssue } from '../security/headers';
import type { Hmac } from '../signing/hmac';
import { signatureHeaders } from '../signing/outbound';
import { resolveDelivery } from '../transformers/secret-templates';
import type { SecretBox } from '../signing/secret-box';
import { coalesce } from './coalesce';
import { guardParams } from './guard-params';
import { semaphore } from './limiter';
import type { Logger } from './logger';
import type { Attempted } from './outcome-records';
import { sleep } from './scheduler';

export type Lane = 'fast' | 'slow';

/** What happened to one webhook in one pass. Only 'attempted' spends (or defers) an attempt. */
export type Step =
  | { kind: 'attempted'; o: Attempted }
  | { kind: 'parked'; webhook: Webhook; until: number; reason: 'circuit_open' | 'rate_limited'; at: number }
  | { kind: 'diverted'; webhook: Webhook; at: number }
  | { kind: 'returned'; webhook: Webhook; at: number }
  | { kind: 'held'; webhook: Webhook; at: number };

export type AttemptDeps = {
  config: Config;
  sender: Sender;
  clock: Clock;
  log: Logger;
  secretBox?: SecretBox;
  /** HMAC-SHA256 used to sign (the runtime's fastest); WebCrypto when not given. */
  hmac?: Hmac;
  /** Per-config signing secrets valid at a time (core/security/config-secrets), newest first. */
  configSecrets?: (configId: string, at: number) => Promise<string[]>;
  guards?: Guards;
  /** The delivery script of a config (own or an ancestor's) and the config it is stored on, run before signing (docs/LUA.md). */
  deliveryScript?: (configId: string) => { code: string; owner: string } | undefined;
  /** Store of the Lua kv module (keys kv:{config_id}:{key}). */
  luaKv?: KvStore;
  /** Lua http (guarded fetch, allowlist of the config's namespace), credentials, and the env of ${VAR} templates. */
  lua?: LuaHostServices;
  random?: () => number;
  /** True once the worker is stopping: waits give up and leave their batch uncommitted. */
  isStopping?: () => boolean;
  /** Makes a webhook that met a pause recoverable (its howk.state snapshot) before the pause holds it in Redis. */
  beforeHold?: (w: Webhook) => Promise<void>;
};

const circuitOutcome = (c: Classification): CircuitOutcome => {
  switch (c.class) {
    case 'delivered':
    case 'unrecoverable': // the endpoint answered: it is up
      return 'success';
    case 'retry':
      return c.circuitFailure ? 'failure' : 'neutral';
    default:
      return 'neutral';
  }
};

const GO: Admission = { kind: 'go', probe: false, counted: { endpoint: false, domain: false } };

/** Admission (guards), signing, sending, classification and decision for one webhook. */
export const createAttempter = (d: AttemptDeps) => {
  const { config } = d;
  const rand = d.random ?? Math.random;
  const gate = semaphore(config.delivery.max_concurrency);
  const params = guardParams(config);
  const guards = d.guards;
  const admit = guards ? coalesce((reqs: Parameters<Guards['admit']>[0]) => guards.admit(reqs, params)) : undefined;
  const complete = guards ? coalesce((done: Completion[]) => guards.complete(done, params).then(() => done.map(() => undefined))) : undefined;
  const pendingCompletions = new Set<Promise<unknown>>();
  /** Records an attempt's end with the guards, in the background. Fail silent: counters carry a TTL and a missed circuit record costs little. */
  const record = (c: Completion): void => {
    if (!complete) return;
    const done = complete(c).catch((e) => d.log.warn('guard completion not recorded', { error: errorMessage(e) }));
    pendingCompletions.add(done);
    void done.finally(() => pendingCompletions.delete(done));
  };

  // A per-request secret wins, then the config's secrets (several during a rotation), then the default.
  const secretsOf = async (w: Webhook): Promise<string[]> => {
    if (w.signing_secret && d.secretBox) return [await d.secretBox.open(w.signing_secret)];
    const own = d.configSecrets ? await d.configSecrets(w.config_id, d.clock.now()) : [];
    if (own.length) return own;
    return config.signing.default_secret ? [config.signing.default_secret] : [];
  };

  // Admissions asked ahead: while a fast-lane webhook is being signed and sent, the next one
  // of its config lane is already asked for, so the Redis round trip leaves the lane's serial
  // path. Its answer is a decision like any other, made one send earlier: whatever it is, the
  // webhook follows it (counters, tokens and probe slots it took are not taken twice).
  const early = new Map<Webhook, Promise<Admission>>();
  const hostOf = (w: Webhook): string => new URL(w.endpoint).hostname;
  const ask = (w: Webhook, host: string, lane: Lane, passPause?: PauseScope['kind'][]): Promise<Admission> =>
    admit!({ endpointHash: w.endpoint_hash, host, configId: w.config_id, lane, now: d.clock.now(), ...(passPause?.length ? { passPause: [...passPause] } : {}) });

  const askAhead = (w: Webhook, lane: Lane): void => {
    if (!admit || early.has(w)) return;
    const p = ask(w, hostOf(w), lane);
    p.catch(() => {}); // a failure is met again (and handled) when the webhook's turn comes
    early.set(w, p);
  };

  /** A webhook asked ahead that will not be attempted now (a stop): gives back what a 'go' counted. */
  const discard = (w: Webhook): void => {
    const p = early.get(w);
    if (!p) return;
    early.delete(w);
    p.then((a) => {
      if (a.kind === 'go') record({ endpointHash: w.endpoint_hash, host: hostOf(w), now: d.clock.now(), outcome: 'neutral', probe: a.probe, counted: a.counted });
    }, () => {});
  };

  const admission = async (w: Webhook, host: string, lane: Lane): Promise<Admission | { kind: 'held' }> => {
    if (!admit || !guards) return GO;
    let asked = early.get(w);
    early.delete(w);
    // Scopes whose drain released this webhook: their (draining) pause lets it through.
    const passPause: PauseScope['kind'][] = [];
    for (;;) {
      let a: Admission;
      try {
        a = await (asked ?? ask(w, host, lane, passPause));
        asked = undefined;
      } catch (e) {
        asked = undefined;
        if (!config.circuit_breaker.enabled) {
          d.log.warn('guards unavailable; delivering without limits (fail open)', { error: errorMessage(e) });
          return GO;
        }
        // Circuit fails closed: without Redis nothing is sent; the webhook waits here, in
        // its batch (uncommitted), until the circuit can be read again.
        if (d.isStopping?.()) throw e;
        d.log.warn('circuit unavailable; delivery waits (fail closed)', { error: errorMessage(e) });
        await sleep(500);
        continue;
      }
      if (a.kind === 'wait') {
        await sleep(50);
        continue;
      }
      if (a.kind === 'paused') {
        const scope = { kind: a.scope, id: a.scope === 'endpoint' ? w.endpoint_hash : w.config_id };
        // Kafka first, then Redis: a FLUSHALL must never take a held webhook whose snapshot
        // howk.state has not got yet (test/unit/reconcile-flush-race.test.ts).
        await d.beforeHold?.(w);
        const held = await guards.holdPaused(scope, encodeWebhook(w), w.released_by);
        if (held === 'held') return { kind: 'held' };
        if (held === 'released') passPause.push(a.scope);
        continue; // resumed and drained meanwhile, or released by the drain: ask again
      }
      return a;
    }
  };

  type Prepared = { body: string; headers: Record<string, string>; retryOn: readonly number[]; scripted: boolean; credentials?: CredentialSession };
  const unscripted = (w: Webhook): Prepared => ({ body: w.payload, headers: w.headers, retryOn: config.retry.retry_on_status, scripted: false });

  /**
   * Runs the config's delivery script on the ORIGINAL payload and headers of the webhook (a
   * retry runs it again on them, never on a transformed body); what it returns is only sent,
   * never stored. A failure is the LuaError's code.
   */
  const prepare = async (w: Webhook): Promise<Prepared | { failed: ScriptReason; message: string }> => {
    const script = d.deliveryScript?.(w.config_id);
    if (script === undefined) return unscripted(w);
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
        { payload: w.payload, headers: w.headers, config_id: w.config_id, attempt: w.attempt, webhook_id: w.id, endpoint: w.endpoint, max_attempts: w.max_attempts, retry_on_status: [...config.retry.retry_on_status] },
        { engine: d.lua?.engine, limits: { timeoutMs: config.lua.timeout, memoryLimitMb: config.lua.memory_limit_mb }, services: { kv: d.luaKv, ...host, log } },
      );
      const retryOn = r.retry_on_status ? [...new Set([...config.retry.retry_on_status, ...r.retry_on_status])] : config.retry.retry_on_status;
      return { body: r.body, headers: r.headers, retryOn, scripted: true, credentials };
    } catch (e) {
      if (e instanceof LuaError) return { failed: e.code, message: redact()(e.message) };
      return { failed: 'script_runtime_error', message: redact()(errorMessage(e)) };
    }
  };

  // ${VAR} templates of the webhook (transformers' _delivery_headers / _delivery_query_params)
  // are resolved here, after the script and right before sending: the values live only in
  // this request, never in the webhook record, so no topic, Redis key or log line has them.
  const secretAllow: ReadonlySet<string> = new Set(config.lua.secret_env_allowlist);
  const secretHosts = config.lua.secret_env_hosts;
  const secretEnv = (name: string): string | undefined => d.lua?.env(name);
  type Target = { url: string; headers: Record<string, string> };

  const send = async (w: Webhook, p: Prepared, target: Target): Promise<DeliveryResponse> => {
    const sent = d.clock.now();
    try {
      const sig = await signatureHeaders({ id: w.id, attempt: w.attempt, timestamp: Math.floor(sent / 1000), body: p.body, secrets: await secretsOf(w), scheme: config.signing.scheme, hmac: d.hmac });
      // A script may set its own content-type; without a script the webhook's headers cannot.
      const headers = p.scripted
        ? { 'content-type': 'application/json', ...p.headers, ...target.headers, 'user-agent': config.delivery.user_agent, ...sig }
        : { ...p.headers, ...target.headers, 'content-type': 'application/json', 'user-agent': config.delivery.user_agent, ...sig };
      // Records enqueued before headers were checked, or anything else that slipped through.
      const bad = findHeaderIssue(headers);
      if (bad) return { kind: 'invalid_request', error: `header ${bad.name}: ${bad.message}`, durationMs: d.clock.now() - sent };
      return await gate(() =>
        d.sender.send({
          url: target.url,
          headers,
          body: p.body,
          timeoutMs: config.delivery.timeout,
        }),
      );
    } catch (e) {
      // Nothing left this process: a secret that cannot sign, or a local fault; never the endpoint's doing.
      return { kind: e instanceof InvalidSecretError ? 'invalid_secret' : 'local_error', error: errorMessage(e), durationMs: d.clock.now() - sent };
    }
  };

  /** One pass of `w`; `next` is the webhook after it in its config lane, if any (asked ahead). */
  const attempt = async (w: Webhook, lane: Lane, next?: Webhook): Promise<Step> => {
    const host = hostOf(w);
    const a = await admission(w, host, lane);
    // Not after a probe: the next admission must see how the probe went.
    if (next && lane === 'fast' && a.kind === 'go' && !a.probe) askAhead(next, lane);
    const now = d.clock.now();
    if (a.kind === 'held') return { kind: 'held', webhook: w, at: now };
    if (a.kind === 'park') return { kind: 'parked', webhook: w, until: a.until, reason: a.reason, at: now };
    if (a.kind === 'divert') return { kind: 'diverted', webhook: w, at: now };
    if (a.kind === 'recovered') return { kind: 'returned', webhook: w, at: now };
    if (a.kind !== 'go') throw new Error(`unexpected admission ${a.kind}`);
    const started = d.clock.now();
    const prepared = await prepare(w);
    // A run that opened a credential may only send to that credential's hosts: the endpoint
    // was chosen at enqueue, possibly by a key that may not see the credential.
    const refused = 'failed' in prepared ? undefined : prepared.credentials?.hostRefusal(host);
    const resolved = 'failed' in prepared || refused ? undefined : resolveDelivery(w, secretAllow, secretEnv, secretHosts);
    const p: Prepared | { failed: ScriptReason; message: string; kind?: 'secret' | 'credential' } = refused
      ? { failed: 'credential_host_not_allowed', message: `credential ${refused.name} may not be sent to ${host}`, kind: 'credential' }
      : resolved && !resolved.ok
        ? { failed: resolved.reason_type, message: resolved.message, kind: 'secret' }
        : prepared;
    if ('failed' in p) {
      const at = d.clock.now();
      // Nothing was sent: the endpoint's counters are released without a circuit outcome.
      record({ endpointHash: w.endpoint_hash, host, now: at, outcome: 'neutral', probe: a.probe, counted: a.counted, error: p.failed });
      const what = p.kind === 'secret' ? 'secret template not resolved' : p.kind === 'credential' ? 'credential not allowed for this destination' : 'delivery script failed';
      d.log.warn(`${what}; dead-lettered`, { webhook_id: w.id, config_id: w.config_id, reason_type: p.failed, error: p.message });
      return { kind: 'attempted', o: { webhook: w, response: { kind: p.kind ?? 'script', error: `${p.failed}: ${p.message}`, durationMs: at - started }, at, decision: { kind: 'dead', reason_type: p.failed, reason: `${what}: ${p.message}` } } };
    }
    const response = await send(w, p, resolved?.ok ? resolved : { url: w.endpoint, headers: {} });
    const at = d.clock.now();
    const c = classify(response.kind === 'response' ? { kind: 'response', status: response.status, retryAfter: response.retryAfter } : { kind: response.kind, error: response.error }, at, p.retryOn);
    const error = response.kind === 'response' ? (response.status >= 400 ? `HTTP ${response.status}` : undefined) : `${response.kind}: ${response.error}`;
    record({ endpointHash: w.endpoint_hash, host, now: at, outcome: circuitOutcome(c), probe: a.probe, counted: a.counted, error });
    return { kind: 'attempted', o: { webhook: w, response, at, decision: decide(w, c, at, config.retry, rand()) } };
  };

  return { attempt, discard, settle: () => Promise.all([...pendingCompletions]) };
};
