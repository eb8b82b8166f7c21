import type { Webhook } from '../domain/webhook';
import type { ScriptReason } from '../domain/status';
import { errorMessage, InvalidSecretError } from '../errors/errors';
import { LuaError, redactDeep, redactor, runDeliveryScript, type CredentialSession, type KvStore, type LuaHostServices } from '../lua';
import { limitSample } from '../policy/adaptive-limit';
import { circuitOutcome, classify } from '../policy/classify';
import { decide } from '../policy/retry';
import type { PipelineEvents } from '../metrics/events';
import type { StageRecorder } from '../metrics/stages';
import type { Admission } from '../ports/guards';
import type { DeliveryResponse, Sender } from '../ports/sender';
import { findHeaderIssue } from '../domain/headers';
import type { Hmac } from '../signing/hmac';
import { signHeaders } from '../signing/outbound';
import { fromBase64 } from '../signing/encoding';
import { resolveDelivery } from '../transformers/secret-templates';
import type { SecretBox } from '../signing/secret-box';
import { splitSecrets } from '../domain/secret-format';
import { createAdmission, type AdmissionDeps, type Lane } from './admission';
import { semaphore } from './limiter';
import { createThrottle } from './endpoint-throttle';
import type { Attempted } from './outcome-records';
import { endAttemptSpan, startAttemptSpan } from './attempt-span';
import { TRACEPARENT, type TraceSpan, type Tracing } from '../ports/tracing';

export type { Lane };

/** What happened to one webhook in one pass. Only 'attempted' spends (or defers) an attempt. */
export type Step =
  | { kind: 'attempted'; o: Attempted }
  | { kind: 'parked'; webhook: Webhook; until: number; reason: 'circuit_open' | 'rate_limited' | 'paused'; at: number }
  | { kind: 'diverted'; webhook: Webhook; at: number }
  | { kind: 'returned'; webhook: Webhook; at: number }
  | { kind: 'held'; webhook: Webhook; at: number }
  /** Made already (consumed again): nothing is sent or written (core/pipeline/known-passes.ts). */
  | { kind: 'known'; webhook: Webhook; at: number };

export type AttemptDeps = AdmissionDeps & {
  sender: Sender;
  secretBox?: SecretBox;
  /** HMAC-SHA256 used to sign (the runtime's fastest); WebCrypto when not given. */
  hmac?: Hmac;
  /** Per-config signing secrets valid at a time (core/security/config-secrets), newest first; an array when known at once. */
  configSecrets?: (configId: string, at: number) => string[] | Promise<string[]>;
  /** The delivery script of a config (own or an ancestor's) and the config it is stored on, run before signing (docs/LUA.md). */
  deliveryScript?: (configId: string) => { code: string; owner: string } | undefined;
  /** Why the webhook's Svix API endpoint no longer takes it (disabled since it was queued), if it does not (core/apps/gate.ts). */
  endpointDisabled?: (w: Webhook) => string | undefined;
  /** A Svix endpoint's own rate limit (core/apps/gate.ts), taken from the guards before admission. */
  endpointThrottle?: (w: Webhook) => { endpointId: string; rate: number } | undefined;
  /** Store of the Lua kv module (keys kv:{config_id}:{key}). */
  luaKv?: KvStore;
  /** Lua http (guarded fetch, allowlist of the config's namespace), credentials, and the env of ${VAR} templates. */
  lua?: LuaHostServices;
  random?: () => number;
  /** Stage times of each delivery (core/metrics/stages.ts); none recorded without it. */
  stages?: StageRecorder;
  /** Attempts, retries, deferrals and dead letters counted (core/metrics/events.ts). */
  events?: PipelineEvents;
  /** A span per attempt, in the webhook's trace (core/ports/tracing.ts); none without it. */
  tracing?: Tracing;
};

/** Admission (guards), signing, sending, classification and decision for one webhook. */
export const createAttempter = (d: AttemptDeps) => {
  const { config } = d;
  const rand = d.random ?? Math.random;
  const gate = semaphore(config.delivery.max_concurrency);
  const admission = createAdmission(d);
  const { record } = admission;
  // A throttleRate parks the webhook (no attempt spent) until its endpoint's own bucket has a
  // token (one second's worth may be saved up); before admission, so it holds no lease.
  const throttle = createThrottle({ ...d, outage: admission.outage, rates: admission.rates });

  // A per-request secret wins, then the config's secrets (several during a rotation), then the
  // default. Without a promise when they are known at once (the common case: every delivery).
  const defaults: readonly string[] = Object.freeze(config.signing.default_secret ? [config.signing.default_secret] : []);
  const ownOr = (own: readonly string[]) => (own.length ? own : defaults);
  const secretsOf = (w: Webhook): readonly string[] | Promise<readonly string[]> => {
    if (w.signing_secret && d.secretBox) return d.secretBox.open(w.signing_secret).then(splitSecrets);
    const own = d.configSecrets?.(w.config_id, d.clock.now());
    if (own === undefined) return defaults;
    return own instanceof Promise ? own.then(ownOr) : ownOr(own);
  };

  type Prepared = { body: string | Uint8Array; headers: Record<string, string>; retryOn: readonly number[]; scripted: boolean; credentials?: CredentialSession };
  /** What is sent: the JSON payload's text, or a raw body's bytes. */
  const bodyOf = (w: Webhook): string | Uint8Array => (w.body_base64 !== undefined ? fromBase64(w.body_base64) : w.payload);
  const unscripted = (w: Webhook): Prepared => ({ body: bodyOf(w), headers: w.headers, retryOn: config.retry.retry_on_status, scripted: false });

  /**
   * Runs the config's delivery script on the ORIGINAL payload and headers of the webhook (a
   * retry runs it again on them, never on a transformed body); what it returns is only sent,
   * never stored. A failure is the LuaError's code.
   */
  const prepare = (w: Webhook): Prepared | Promise<Prepared | { failed: ScriptReason; message: string }> => {
    const script = d.deliveryScript?.(w.config_id);
    // Without a script nothing waits: no promise for the common case.
    return script === undefined ? unscripted(w) : runScript(w, script);
  };

  const runScript = async (w: Webhook, script: { code: string; owner: string }): Promise<Prepared | { failed: ScriptReason; message: string }> => {
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

  // ${VAR} templates of the webhook (transformers' _delivery_headers / _delivery_query_params)
  // are resolved here, after the script and right before sending: the values live only in
  // this request, never in the webhook record, so no topic, Redis key or log line has them.
  const secretAllow: ReadonlySet<string> = new Set(config.lua.secret_env_allowlist);
  const secretHosts = config.lua.secret_env_hosts;
  const secretEnv = (name: string): string | undefined => d.lua?.env(name);
  type Target = { url: string; headers: Record<string, string> };

  // What the Inspector shows of the signing: HMAC outputs and the timestamp, never a secret.
  const SIGNED = ['webhook-timestamp', 'webhook-signature', 'x-webhook-signature'];
  const signedOf = (sig: Record<string, string>) => {
    const out: Record<string, string> = {};
    for (const k of SIGNED) if (sig[k] !== undefined) out[k] = sig[k];
    return out;
  };

  const send = async (w: Webhook, p: Prepared, target: Target, admittedAt: number, traceparent?: string): Promise<DeliveryResponse> => {
    const sent = d.clock.now();
    try {
      // Awaited only when they are promises: each await of a known value is a microtask hop.
      let secrets = secretsOf(w);
      if (secrets instanceof Promise) secrets = await secrets;
      let sig = signHeaders({ id: w.id, attempt: w.attempt, timestamp: Math.floor(sent / 1000), body: p.body, secrets, scheme: config.signing.scheme, hmac: d.hmac });
      if (sig instanceof Promise) sig = await sig;
      // A script may set its own content-type; without a script the webhook's headers cannot.
      // A raw body's type is its own, whatever a script says.
      const headers: Record<string, string> = p.scripted
        ? { 'content-type': 'application/json', ...p.headers, ...target.headers, 'user-agent': config.delivery.user_agent, ...sig }
        : { ...p.headers, ...target.headers, 'content-type': 'application/json', 'user-agent': config.delivery.user_agent, ...sig };
      if (w.content_type !== undefined) headers['content-type'] = w.content_type;
      // Not covered by the signature (id, timestamp and body are), so it cannot break one.
      if (traceparent) headers[TRACEPARENT] = traceparent;
      // Records enqueued before headers were checked, or anything else that slipped through.
      const bad = findHeaderIssue(headers);
      if (bad) return { kind: 'invalid_request', error: `header ${bad.name}: ${bad.message}`, durationMs: d.clock.now() - sent };
      if (!gate.take()) await gate.wait();
      try {
        const handed = d.clock.now();
        const r = await d.sender.send({
          url: target.url,
          headers,
          body: p.body,
          timeoutMs: d.endpointPolicy?.(w)?.timeoutMs ?? config.delivery.timeout,
        });
        if (d.stages) {
          // Written: when the client says the request left (a pool wait and connect before it), else when it was handed over.
          const written = handed + (r.kind === 'response' ? (r.writtenMs ?? 0) : 0);
          d.stages.stage('sent', written - admittedAt);
          d.stages.stage('responded', d.clock.now() - written);
        }
        return r.kind === 'response' ? { ...r, signed: signedOf(sig) } : r;
      } finally {
        gate.release();
      }
    } catch (e) {
      // Nothing left this process: a secret that cannot sign, or a local fault; never the endpoint's doing.
      return { kind: e instanceof InvalidSecretError ? 'invalid_secret' : 'local_error', error: errorMessage(e), durationMs: d.clock.now() - sent };
    }
  };

  /** One pass of `w`; `next` is the webhook after it in its config lane, if any (asked ahead); `fetchedAt` when its batch was fetched. */
  const attempt = async (w: Webhook, lane: Lane, next?: Webhook, fetchedAt?: number): Promise<Step> => {
    const throttled = await throttle(w);
    // An admission asked ahead for it gives back its connection slot and leases.
    if (throttled) return (admission.discard(w), throttled);
    const host = admission.hostOf(w);
    const { a, release } = await admission.admit(w, lane);
    // Not after a probe: the next admission must see how the probe went.
    if (next && lane === 'fast' && a.kind === 'go' && !a.probe) admission.askAhead(next, lane);
    try {
      const step = attemptAdmitted(w, host, a, lane, fetchedAt);
      return step instanceof Promise ? await step : step;
    } catch (e) {
      admission.abandon(w, a);
      throw e;
    } finally {
      release();
    }
  };

  // Not async: a step known at once (a hold) or the delivery's own promise, not one more around it.
  const attemptAdmitted = (w: Webhook, host: string, a: Admission | { kind: 'held' }, lane: Lane, fetchedAt?: number): Step | Promise<Step> => {
    const now = d.clock.now();
    if (a.kind === 'held') return { kind: 'held', webhook: w, at: now };
    if (a.kind === 'park') return { kind: 'parked', webhook: w, until: a.until, reason: a.reason, at: now };
    if (a.kind === 'divert') return { kind: 'diverted', webhook: w, at: now };
    if (a.kind === 'recovered') return { kind: 'returned', webhook: w, at: now };
    if (a.kind !== 'go') throw new Error(`unexpected admission ${a.kind}`);
    if (fetchedAt !== undefined) d.stages?.stage('admitted', now - fetchedAt);
    const span = startAttemptSpan(d.tracing, w, lane);
    const step = deliverAdmitted(w, host, a, now, span);
    if (!span) return step;
    return step.then((s) => {
      endAttemptSpan(span, s.o);
      return s;
    });
  };

  const deliverAdmitted = async (w: Webhook, host: string, a: Extract<Admission, { kind: 'go' }>, now: number, span?: TraceSpan): Promise<Extract<Step, { kind: 'attempted' }>> => {
    const started = d.clock.now();
    const off = d.endpointDisabled?.(w);
    const pending = off === undefined ? prepare(w) : unscripted(w);
    const prepared = pending instanceof Promise ? await pending : pending;
    // A run that opened a credential may only send to that credential's hosts: the endpoint
    // was chosen at enqueue, possibly by a key that may not see the credential.
    const refused = 'failed' in prepared ? undefined : prepared.credentials?.hostRefusal(host);
    const resolved = 'failed' in prepared || refused ? undefined : resolveDelivery(w, secretAllow, secretEnv, secretHosts);
    const p: Prepared | { failed: ScriptReason; message: string; kind?: 'secret' | 'credential' | 'endpoint' } = off
      ? { failed: 'endpoint_disabled', message: off, kind: 'endpoint' }
      : refused
        ? { failed: 'credential_host_not_allowed', message: `credential ${refused.name} may not be sent to ${host}`, kind: 'credential' }
        : resolved && !resolved.ok
          ? { failed: resolved.reason_type, message: resolved.message, kind: 'secret' }
          : prepared;
    if ('failed' in p) {
      const at = d.clock.now();
      // Nothing was sent: the endpoint's leases end without a circuit outcome.
      record({ id: w.id, endpointHash: w.endpoint_hash, host, now: at, outcome: 'neutral', probe: a.probe, counted: a.counted, error: p.failed });
      const what = {
        secret: 'secret template not resolved',
        credential: 'credential not allowed for this destination',
        endpoint: 'endpoint disabled or deleted',
        script: 'delivery script failed',
      }[p.kind ?? 'script'];
      d.log.warn(`${what}; dead-lettered`, { webhook_id: w.id, config_id: w.config_id, reason_type: p.failed, error: p.message });
      return {
        kind: 'attempted',
        o: {
          webhook: w,
          response: { kind: p.kind ?? 'script', error: `${p.failed}: ${p.message}`, durationMs: at - started },
          at,
          decision: { kind: 'dead', reason_type: p.failed, reason: `${what}: ${p.message}` },
        },
      };
    }
    const response = await send(w, p, resolved?.ok ? resolved : { url: w.endpoint, headers: {} }, now, d.tracing?.outbound ? span?.traceparent : undefined);
    const at = d.clock.now();
    const c = classify(
      response.kind === 'response' ? { kind: 'response', status: response.status, retryAfter: response.retryAfter } : { kind: response.kind, error: response.error },
      at,
      p.retryOn,
    );
    const error = response.kind === 'response' ? (response.status >= 400 ? `HTTP ${response.status}` : undefined) : `${response.kind}: ${response.error}`;
    const outcome = circuitOutcome(c);
    record({ id: w.id, endpointHash: w.endpoint_hash, host, now: at, outcome, probe: a.probe, counted: a.counted, error, sample: limitSample(response, outcome) });
    const cap = d.endpointPolicy?.(w)?.maxBackoffMs;
    const decision = decide(w, c, at, cap === undefined ? config.retry : { ...config.retry, max_delay: cap }, rand());
    if (decision.kind === 'delivered' && d.stages) {
      const created = Date.parse(w.created_at);
      if (!Number.isNaN(created)) d.stages.delivered(at - created, w.attempt + w.deferrals > 0);
    }
    return { kind: 'attempted', o: { webhook: w, response, at, decision } };
  };

  return { attempt, discard: admission.discard, settle: admission.settle };
};
