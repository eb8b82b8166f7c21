import type { Config } from '../config/schema';
import { findHeaderIssue } from '../domain/headers';
import { splitSecrets } from '../domain/secret-format';
import type { Webhook } from '../domain/webhook';
import { errorMessage, InvalidSecretError } from '../errors/errors';
import type { StageRecorder } from '../metrics/stages';
import type { EndpointPolicy } from '../policy/endpoint-policy';
import type { Clock } from '../ports/clock';
import type { DeliveryResponse, Sender } from '../ports/sender';
import { TRACEPARENT } from '../ports/tracing';
import type { Hmac } from '../signing/hmac';
import { signHeaders } from '../signing/outbound';
import type { SecretBox } from '../signing/secret-box';
import { semaphore } from './limiter';
import type { Prepared, Target } from './prepare';

export type SignSendDeps = {
  config: Config;
  clock: Clock;
  sender: Sender;
  secretBox?: SecretBox;
  /** HMAC-SHA256 used to sign (the runtime's fastest); WebCrypto when not given. */
  hmac?: Hmac;
  /** Per-config signing secrets valid at a time (core/security/config-secrets), newest first; an array when known at once. */
  configSecrets?: (configId: string, at: number) => string[] | Promise<string[]>;
  endpointPolicy?: (w: Webhook) => EndpointPolicy | undefined;
  /** Stage times of each delivery (core/metrics/stages.ts); none recorded without it. */
  stages?: StageRecorder;
};

// What the Inspector shows of the signing: HMAC outputs and the timestamp, never a secret.
const SIGNED = ['webhook-timestamp', 'webhook-signature', 'x-webhook-signature'];
const signedOf = (sig: Record<string, string>) => {
  const out: Record<string, string> = {};
  for (const k of SIGNED) if (sig[k] !== undefined) out[k] = sig[k];
  return out;
};

/**
 * The sign and send stages of an attempt: the request's headers (signature last), then the
 * worker-wide send slots (`delivery.max_concurrency`) and the sender. A local fault (a secret
 * that cannot sign, a header that may not leave) is a response kind, never a throw.
 */
export const createSignSend = (d: SignSendDeps) => {
  const { config } = d;
  const sendSlots = semaphore(config.delivery.max_concurrency);
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

  /** The request's headers around its signature. */
  const headersOf = (w: Webhook, p: Prepared, target: Target, sig: Record<string, string>, traceparent?: string) => {
    // A script may set its own content-type; without a script the webhook's headers cannot.
    // A raw body's type is its own, whatever a script says.
    const headers: Record<string, string> = p.scripted
      ? { 'content-type': 'application/json', ...p.headers, ...target.headers, 'user-agent': config.delivery.user_agent, ...sig }
      : { ...p.headers, ...target.headers, 'content-type': 'application/json', 'user-agent': config.delivery.user_agent, ...sig };
    if (w.content_type !== undefined) headers['content-type'] = w.content_type;
    // Not covered by the signature (id, timestamp and body are), so it cannot break one.
    if (traceparent) headers[TRACEPARENT] = traceparent;
    return headers;
  };

  const sendSigned = async (w: Webhook, p: Prepared, target: Target, headers: Record<string, string>, admittedAt: number): Promise<DeliveryResponse> => {
    if (!sendSlots.take()) await sendSlots.wait();
    try {
      const handed = d.clock.now();
      const r = await d.sender.send({ url: target.url, headers, body: p.body, timeoutMs: d.endpointPolicy?.(w)?.timeoutMs ?? config.delivery.timeout });
      if (d.stages) {
        // Written: when the client says the request left (a pool wait and connect before it), else when it was handed over.
        const written = handed + (r.kind === 'response' ? (r.writtenMs ?? 0) : 0);
        d.stages.stage('sent', written - admittedAt);
        d.stages.stage('responded', d.clock.now() - written);
      }
      return r;
    } finally {
      sendSlots.release();
    }
  };

  return async (w: Webhook, p: Prepared, target: Target, admittedAt: number, traceparent?: string): Promise<DeliveryResponse> => {
    const sent = d.clock.now();
    try {
      // Awaited only when they are promises: each await of a known value is a microtask hop.
      let secrets = secretsOf(w);
      if (secrets instanceof Promise) secrets = await secrets;
      let sig = signHeaders({ id: w.id, attempt: w.attempt, timestamp: Math.floor(sent / 1000), body: p.body, secrets, scheme: config.signing.scheme, hmac: d.hmac });
      if (sig instanceof Promise) sig = await sig;
      const headers = headersOf(w, p, target, sig, traceparent);
      // Records enqueued before headers were checked, or anything else that slipped through.
      const bad = findHeaderIssue(headers);
      if (bad) return { kind: 'invalid_request', error: `header ${bad.name}: ${bad.message}`, durationMs: d.clock.now() - sent };
      const r = await sendSigned(w, p, target, headers, admittedAt);
      return r.kind === 'response' ? { ...r, signed: signedOf(sig) } : r;
    } catch (e) {
      // Nothing left this process: a secret that cannot sign, or a local fault; never the endpoint's doing.
      return { kind: e instanceof InvalidSecretError ? 'invalid_secret' : 'local_error', error: errorMessage(e), durationMs: d.clock.now() - sent };
    }
  };
};
